#include "headwise/train/circuits.hpp"

#include "headwise/fast/blas.hpp"
#include "headwise/train/loss.hpp"

#include <algorithm>
#include <cmath>

namespace headwise::train {

namespace {

HeadRef best_of(const std::vector<float>& scores, std::size_t layer) {
    HeadRef best{layer, 0, scores.empty() ? 0.0f : scores[0]};
    for (std::size_t h = 1; h < scores.size(); ++h)
        if (scores[h] > best.score) best = {layer, h, scores[h]};
    return best;
}

// Head h's OV circuit as the unembedding reads it: W_U diag(g_f) C W_o^h, (V, d_head), where W_o^h
// (d, d_head) is the columns h d_head .. (h + 1) d_head - 1 of W_o and C (d, d) subtracts the mean.
std::vector<double> ov_to_logits(const Params& params, std::size_t layer, std::size_t h) {
    const Config& c = params.config;
    const std::size_t d = c.d_model, dh = c.d_head(), V = c.vocab;
    const float* W_o = params.at(params.layout.layers[layer].out_proj);  // (d, d), (out, in)
    const float* g_f = params.at(params.layout.ln_f_weight);             // (d)
    const float* W_U = params.at(params.layout.unembed);                 // (V, d)
    std::vector<double> centred(d * dh);                                 // C W_o^h (d, d_head)
    for (std::size_t i = 0; i < dh; ++i) {
        double mean = 0.0;
        for (std::size_t j = 0; j < d; ++j) mean += double(W_o[j * d + h * dh + i]);
        mean /= double(d);
        for (std::size_t j = 0; j < d; ++j) centred[j * dh + i] = double(W_o[j * d + h * dh + i]) - mean;
    }
    std::vector<double> out(V * dh, 0.0);  // (V, d_head)
    for (std::size_t k = 0; k < V; ++k)
        for (std::size_t j = 0; j < d; ++j) {
            const double u = double(W_U[k * d + j]) * double(g_f[j]);
            for (std::size_t i = 0; i < dh; ++i) out[k * dh + i] += u * centred[j * dh + i];
        }
    return out;
}

// The seen-token figures of CircuitScores over the rows r = (b, n) with targets[r] >= 0, logits (B, N, V).
void seen_tokens(const Batch& batch, std::span<const float> logits, std::size_t V,
                 std::span<const std::int32_t> targets, CircuitScores& s) {
    const std::size_t N = batch.seq;
    std::size_t rows = 0;
    std::vector<char> seen(V);
    for (std::size_t b = 0; b < batch.batch; ++b) {
        std::fill(seen.begin(), seen.end(), 0);
        std::size_t distinct = 0;
        for (std::size_t n = 0; n < N; ++n) {
            const std::size_t t = std::size_t(batch.token(b, n));
            distinct += !seen[t];
            seen[t] = 1;
            if (targets[b * N + n] < 0) continue;
            const float* z = logits.data() + (b * N + n) * V;  // (V)
            const double top = double(*std::max_element(z, z + V));
            double all = 0.0, on_seen = 0.0;
            for (std::size_t k = 0; k < V; ++k) {
                const double e = std::exp(double(z[k]) - top);
                all += e;
                on_seen += seen[k] ? e : 0.0;
            }
            s.seen_mass += on_seen / all;
            s.seen_share += double(distinct) / double(V);
            s.seen_even_bet_loss += std::log(double(distinct));
            ++rows;
        }
    }
    if (rows == 0) return;
    s.seen_mass /= double(rows);
    s.seen_share /= double(rows);
    s.seen_even_bet_loss /= double(rows);
}

}  // namespace

HeadRef CircuitScores::best_previous_token(std::size_t layer) const { return best_of(previous_token.at(layer), layer); }

HeadRef CircuitScores::best_induction() const { return best_of(induction.back(), induction.size() - 1); }

std::vector<std::vector<float>> copying_scores(const Params& params, const Activations& acts,
                                               std::span<const std::int32_t> tokens) {
    const Config& c = params.config;
    const std::size_t B = acts.batch, N = acts.seq, H = c.heads, dh = c.d_head(), V = c.vocab, M = B * N;
    std::vector<std::vector<float>> scores(acts.layers.size(), std::vector<float>(H, 0.0f));
    std::vector<float> ov(V * dh), values(M * dh), logits(M * V);  // (V, d_head), (B N, d_head), (B N, V)
    for (std::size_t l = 0; l < acts.layers.size(); ++l) {
        const Tensor4& v = acts.layers[l].v;  // (B, H, N, d_head)
        for (std::size_t h = 0; h < H; ++h) {
            const std::vector<double> circuit = ov_to_logits(params, l, h);
            std::copy(circuit.begin(), circuit.end(), ov.begin());
            for (std::size_t b = 0; b < B; ++b)  // head h's values, one row per position (b, s)
                std::copy_n(&v(b, h, 0, 0), N * dh, values.begin() + std::ptrdiff_t(b * N * dh));
            blas::gemm(false, true, M, V, dh, 1.0f, values.data(), dh, ov.data(), dh, 0.0f, logits.data(), V);
            std::size_t top = 0;
            for (std::size_t r = 0; r < M; ++r) {
                const float* z = logits.data() + r * V;  // (V)
                top += std::size_t(std::max_element(z, z + V) - z) == std::size_t(tokens[r]);
            }
            scores[l][h] = float(double(top) / double(M));
        }
    }
    return scores;
}

CircuitScores measure(const Params& params, const Batch& batch, const ForwardOptions& options) {
    const Config& c = params.config;
    const std::size_t B = batch.batch, N = batch.seq, H = c.heads, V = c.vocab;
    ForwardOptions o = options;
    o.keep_weights = true;
    Activations acts;
    forward(params, batch.tokens, B, N, acts, o);

    CircuitScores s;
    for (const LayerCache& lc : acts.layers) {
        const Tensor4& w = *lc.weights;  // (B, H, N, N)
        std::vector<float> prev(H, 0.0f), induction(H, 0.0f);
        for (std::size_t h = 0; h < H; ++h) {
            double p = 0.0, ind = 0.0;
            std::size_t n_ind = 0;
            for (std::size_t b = 0; b < B; ++b) {
                for (std::size_t n = 1; n < N; ++n) p += w(b, h, n, n - 1);
                const Repeat& r = batch.repeats[b];
                for (std::size_t i = 0; i < r.length; ++i, ++n_ind) ind += w(b, h, r.second + i, r.first + i + 1);
            }
            prev[h] = float(p / double(B * (N - 1)));
            induction[h] = float(ind / double(n_ind));
        }
        s.previous_token.push_back(prev);
        s.induction.push_back(induction);
    }
    s.copying = copying_scores(params, acts, batch.tokens);
    const std::vector<std::int32_t> targets = next_token_targets(batch);
    s.loss = cross_entropy(acts.logits, V, targets);
    std::vector<std::int32_t> copy(targets.size(), -1);
    for (std::size_t b = 0; b < B; ++b) {
        const Repeat& r = batch.repeats[b];
        for (std::size_t i = 0; i + 1 < r.length; ++i) copy[b * N + r.second + i] = targets[b * N + r.second + i];
    }
    s.copy_loss = cross_entropy(acts.logits, V, copy);
    seen_tokens(batch, acts.logits, V, copy, s);
    return s;
}

std::vector<HeadAblation> ablate_each_head(const Params& params, const Batch& batch) {
    std::vector<HeadAblation> out;
    for (std::size_t l = 0; l < params.config.layers; ++l)
        for (std::size_t h = 0; h < params.config.heads; ++h) {
            ForwardOptions cut;
            cut.ablate_layer = l;
            cut.ablate_head = h;
            HeadAblation a{l, h, measure(params, batch, cut), {}};
            cut.ablate_with = Ablation::mean;
            a.mean = measure(params, batch, cut);
            out.push_back(std::move(a));
        }
    return out;
}

}  // namespace headwise::train
