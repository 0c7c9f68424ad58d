#include "headwise/train/circuits.hpp"

#include "headwise/train/loss.hpp"

namespace headwise::train {

namespace {

HeadRef best_of(const std::vector<float>& scores, std::size_t layer) {
    HeadRef best{layer, 0, scores.empty() ? 0.0f : scores[0]};
    for (std::size_t h = 1; h < scores.size(); ++h)
        if (scores[h] > best.score) best = {layer, h, scores[h]};
    return best;
}

}  // namespace

HeadRef CircuitScores::best_previous_token(std::size_t layer) const { return best_of(previous_token.at(layer), layer); }

HeadRef CircuitScores::best_induction() const { return best_of(induction.back(), induction.size() - 1); }

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
    const std::vector<std::int32_t> targets = next_token_targets(batch);
    s.loss = cross_entropy(acts.logits, V, targets);
    std::vector<std::int32_t> copy(targets.size(), -1);
    for (std::size_t b = 0; b < B; ++b) {
        const Repeat& r = batch.repeats[b];
        for (std::size_t i = 0; i + 1 < r.length; ++i) copy[b * N + r.second + i] = targets[b * N + r.second + i];
    }
    s.copy_loss = cross_entropy(acts.logits, V, copy);
    return s;
}

}  // namespace headwise::train
