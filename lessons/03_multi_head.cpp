// Lesson 03 -- multi-head attention.
//
// One attention head produces one set of weights per token: one notion of "who matters to me".
// Multi-head attention runs H smaller heads side by side, each in its own d_head-wide slice of
// the projections (lesson 02), then concatenates their outputs and mixes them with W_O:
//
//     head_i       = softmax(Q_i K_i^T / sqrt(d_head)) V_i          Q_i = X W_Q^i, ...
//     MultiHead(X) = concat(head_1, ..., head_H) W_O
//
// This file computes that forward pass step by step, then computes it twice more -- as a loop
// over heads with separate small weights and as one fused QKV projection -- and shows all three
// agree. Then it measures why the scale is sqrt(d_head) and not sqrt(d_model), what W_O does,
// draws every head's weights, and ends with cross-attention (queries and keys from different
// sequences).
//
// Dimension letters: B = batch, N = tokens, H = heads, d_head = d_model / H, M = tokens of the
// second sequence in cross-attention.
// Run:  ./headwise run 3      or      build/lessons/03_multi_head --help
//       build/lessons/03_multi_head --html heads.html   these random heads in the browser, to set
//       beside a trained model's (`./headwise heads --html`, lesson 07)

#include "headwise/reference/batched.hpp"
#include "headwise/io/figure.hpp"
#include "headwise/io/head_view.hpp"
#include "headwise/io/heatmap.hpp"
#include "headwise/io/npy.hpp"
#include "headwise/lesson/lesson.hpp"
#include "headwise/model/bert.hpp"  // bert::cosine
#include "headwise/model/head_roles.hpp"
#include "headwise/reference/params.hpp"

#include <cmath>

using namespace headwise;

namespace {

// ---------------------------------------------------------------------------------------------
// Step helpers.

// Adds a heads axis of size 1: (B, N, d_head) -> (B, 1, N, d_head).
Tensor4 as_one_head(const Tensor3& x) { return xt::expand_dims(x, 1); }

double variance(const Tensor4& t) {
    const double mean = xt::mean(t)();
    double s = 0.0;
    for (float x : t) s += (x - mean) * (x - mean);
    return s / static_cast<double>(t.size());
}

// Mean entropy of each head's weight rows (over batch and queries): one number per head.
std::vector<double> head_entropies(const Tensor4& weights) {
    const auto e = row_entropy(weights);  // (B, H, N_q)
    std::vector<double> out(weights.shape()[1]);
    for (std::size_t h = 0; h < out.size(); ++h) out[h] = xt::mean(xt::view(e, xt::all(), h, xt::all()))();
    return out;
}

// share(g, j): of everything that reaches the output dims of block g (dims g*d_head ..), the
// fraction that comes from head j, measured as the sum over tokens of |w_o[o, c] * concat[b, n, c]|
// for o in block g and c in head j's block. Since |w * c| = |w| * |c|, the sum over tokens can be
// taken first: acc(o, c) = |w_o[o, c]| * sum_tokens |concat[., c]|.
Tensor2 head_shares(const Tensor3& concat, const Tensor2& w_o, std::size_t heads) {
    const std::size_t rows = concat.shape()[0] * concat.shape()[1], d = concat.shape()[2], d_head = d / heads;
    std::vector<double> column(d, 0.0);  // sum over tokens of |concat[., c]|
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < d; ++c) column[c] += std::abs(double(concat.data()[r * d + c]));
    std::vector<double> acc(heads * heads, 0.0);  // (output block g, head j)
    for (std::size_t o = 0; o < d; ++o)
        for (std::size_t c = 0; c < d; ++c)
            acc[(o / d_head) * heads + c / d_head] += std::abs(double(w_o(o, c))) * column[c];
    Tensor2 share = xt::zeros<float>({heads, heads});  // (H output blocks, H heads)
    for (std::size_t g = 0; g < heads; ++g) {
        double sum = 0.0;
        for (std::size_t j = 0; j < heads; ++j) sum += acc[g * heads + j];
        for (std::size_t j = 0; j < heads; ++j)
            share(g, j) = sum > 0.0 ? static_cast<float>(acc[g * heads + j] / sum) : 0.0f;
    }
    return share;
}

// How many of the output features differ between two (B, N, d_model) outputs anywhere.
std::size_t features_changed(const Tensor3& a, const Tensor3& b) {
    const std::size_t d = a.shape()[2];
    std::vector<bool> changed(d, false);
    for (std::size_t i = 0; i < a.size(); ++i) changed[i % d] = changed[i % d] || a.data()[i] != b.data()[i];
    return static_cast<std::size_t>(std::count(changed.begin(), changed.end(), true));
}

void print_share_table(const Tensor2& share, std::size_t d_head) {
    const std::size_t shown = std::min<std::size_t>(share.shape()[0], 8);
    fmt::print("    {:<14}", "output dims");
    for (std::size_t j = 0; j < shown; ++j) fmt::print(" {:>6}", fmt::format("head {}", j));
    fmt::print("\n");
    for (std::size_t g = 0; g < shown; ++g) {
        fmt::print("    {:<14}", fmt::format("{}..{}", g * d_head, (g + 1) * d_head - 1));
        for (std::size_t j = 0; j < shown; ++j) fmt::print(" {:>5.1f}%", 100.0 * share(g, j));
        fmt::print("\n");
    }
    if (shown < share.shape()[0]) fmt::print("    ... (first {} of {} heads shown)\n", shown, share.shape()[0]);
}

// The sizes every step reads: batch, tokens, d_model, heads, d_head = d_model / H.
struct Sizes {
    std::size_t B, N, d, H, dh;
};

// ---------------------------------------------------------------------------------------------
// The steps, in the order the lesson tells them.

// The module, its three projections cut out of in_proj_weight, and the input.
struct Model {
    MultiHeadAttention mha;  // in_proj (3 d_model, d_model), out_proj = w_o (d_model, d_model)
    Tensor2 w_q, w_k, w_v;   // (d_model, d_model) each
    Tensor3 x;               // (B, N, d_model)
};

Model step1_module(const Tracer& trace, Random& rng, const Sizes& z) {
    trace.section("step 1: the module -- PyTorch's layout, one (3*d_model, d_model) in_proj_weight");
    const auto [B, N, d, H, dh] = z;
    // Weights drawn with variance 1/d_model keep q and k entries at variance ~1, as in a trained
    // model; PyTorch's smaller initial weights would leave every head nearly uniform.
    MultiHeadAttention mha;
    mha.heads = H;
    mha.in_proj_weight = rng.normal<2>({3 * d, d}, 1.0f / std::sqrt(static_cast<float>(d)));  // (3 d_model, d_model)
    mha.out_proj_weight = rng.linear_weight(d, d);                                            // (d_model, d_model)
    mha.validate();
    trace("in_proj_weight", mha.in_proj_weight, "3*d_model, d_model");
    trace("out_proj_weight = w_o", mha.out_proj_weight, "d_model, d_model");
    const Tensor2 w_q = xt::view(mha.in_proj_weight, xt::range(0, d), xt::all());          // (d_model, d_model)
    const Tensor2 w_k = xt::view(mha.in_proj_weight, xt::range(d, 2 * d), xt::all());      // (d_model, d_model)
    const Tensor2 w_v = xt::view(mha.in_proj_weight, xt::range(2 * d, 3 * d), xt::all());  // (d_model, d_model)
    trace("w_q = rows 0..d-1", w_q, "d_model, d_model");
    const Tensor3 x = rng.normal<3>({B, N, d});  // (B, N, d_model)
    trace("x", x, "B, N, d_model");
    return {mha, w_q, w_k, w_v, x};
}

// What the batched forward pass of step 2 makes and later steps read.
struct Forward {
    Tensor3 q;                // (B, N, d_model)
    Tensor4 q_h, k_h;         // (B, H, N, d_head)
    Tensor4 scores, weights;  // (B, H, N, N)
    Tensor3 concat, y;        // (B, N, d_model)
};

Forward step2_batched(const Tracer& trace, const Sizes& z, const Model& m) {
    trace.section("step 2: the batched forward pass, every step");
    const auto [B, N, d, H, dh] = z;
    const auto& [x, w_q, w_k, w_v, w_o] = std::tie(m.x, m.w_q, m.w_k, m.w_v, m.mha.out_proj_weight);
    const Tensor3 q = linear(x, w_q);  // (B, N, d_model)
    const Tensor3 k = linear(x, w_k);  // (B, N, d_model)
    const Tensor3 v = linear(x, w_v);  // (B, N, d_model)
    trace("q = x . w_q^T", q, "B, N, d_model");
    trace("k = x . w_k^T", k, "B, N, d_model");
    trace("v = x . w_v^T", v, "B, N, d_model");
    const Tensor4 q_h = split_heads(q, H);  // (B, H, N, d_head)
    const Tensor4 k_h = split_heads(k, H);  // (B, H, N, d_head)
    const Tensor4 v_h = split_heads(v, H);  // (B, H, N, d_head)
    trace("q_h = split_heads(q)", q_h, "B, H, N, d_head");
    trace("k_h", k_h, "B, H, N, d_head");
    trace("v_h", v_h, "B, H, N, d_head");
    // scores (B, H, N, N) = q_h . k_h^T / sqrt(d_head): every head compares its own slices.
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    const Tensor4 scores = attention_scores(q_h, k_h, scale);  // (B, H, N, N)
    trace("scores", scores, "B, H, N_query, N_key");
    const Tensor4 weights = softmax(scores);  // (B, H, N, N)
    trace("weights = softmax", weights, "B, H, N_query, N_key");
    const Tensor4 heads_out = apply_weights(weights, v_h);  // (B, H, N, d_head)
    trace("heads_out = w . v_h", heads_out, "B, H, N, d_head");
    const Tensor3 concat = merge_heads(heads_out);  // (B, N, d_model)
    trace("concat = merge_heads", concat, "B, N, d_model");
    const Tensor3 y = linear(concat, w_o);  // (B, N, d_model)
    trace("y = concat . w_o^T", y, "B, N, d_model");
    const double worst_row = xt::amax(xt::abs(xt::sum(weights, {3}) - 1.0f))();
    fmt::print("  {} rows of weights (one per batch, head and query), each sums to 1: largest |sum - 1| = {:.2e}\n",
               B * H * N, worst_row);
    return {q, q_h, k_h, scores, weights, concat, y};
}

void step3_three_ways(const Tracer& trace, const Sizes& z, const Model& m, const Tensor3& y) {
    trace.section("step 3: three ways to compute it, one answer");
    const auto [B, N, d, H, dh] = z;
    const auto& [mha, x, w_o] = std::tie(m.mha, m.x, m.mha.out_proj_weight);
    // (a) A loop over heads, each with its own small W_Q^i, W_K^i, W_V^i of d_head rows.
    const params::PerHeadAttention per_head = params::split_per_head(mha);
    Tensor3 concat_loop = Tensor3::from_shape({B, N, d});  // (B, N, d_model)
    for (std::size_t h = 0; h < H; ++h) {
        const Tensor3 q_i = linear(x, per_head.w_q[h]);  // (B, N, d_head)
        const Tensor3 k_i = linear(x, per_head.w_k[h]);  // (B, N, d_head)
        const Tensor3 v_i = linear(x, per_head.w_v[h]);  // (B, N, d_head)
        const Tensor4 head_i =                           // (B, 1, N, d_head)
            scaled_dot_product_attention(as_one_head(q_i), as_one_head(k_i), as_one_head(v_i));
        if (h == 0) {
            trace("w_q^0", per_head.w_q[0], "d_head, d_model");
            trace("q_0 = x . (w_q^0)^T", q_i, "B, N, d_head");
            trace("head_0", head_i, "B, 1, N, d_head");
        }
        xt::view(concat_loop, xt::all(), xt::all(), xt::range(h * dh, (h + 1) * dh)) = xt::view(head_i, xt::all(), 0);
    }
    trace("concat of the H heads", concat_loop, "B, N, d_model");
    const Tensor3 y_loop = linear(concat_loop, per_head.w_o);  // (B, N, d_model)

    // (c) One fused projection to 3 * d_model features, then cut into q, k, v.
    const Tensor3 qkv = linear(x, mha.in_proj_weight);  // (B, N, 3 d_model)
    trace("qkv = x . w_qkv^T", qkv, "B, N, 3*d_model");
    const Tensor3 q_f = xt::view(qkv, xt::all(), xt::all(), xt::range(0, d));          // (B, N, d_model)
    const Tensor3 k_f = xt::view(qkv, xt::all(), xt::all(), xt::range(d, 2 * d));      // (B, N, d_model)
    const Tensor3 v_f = xt::view(qkv, xt::all(), xt::all(), xt::range(2 * d, 3 * d));  // (B, N, d_model)
    trace("q, k, v = qkv.chunk(3)", q_f, "B, N, d_model");
    const Tensor3 y_fused = linear(  // (B, N, d_model)
        merge_heads(scaled_dot_product_attention(split_heads(q_f, H), split_heads(k_f, H), split_heads(v_f, H))), w_o);
    const Tensor3 y_library = mha.forward(x);  // (B, N, d_model)

    fmt::print("  {:<44} {:<16} {}\n", "form", "output", "max |diff| vs batched");
    const double typical = xt::mean(xt::abs(y))();
    const std::pair<const char*, const Tensor3*> forms[] = {
        {"(a) loop over heads, H x 3 small weights", &y_loop},
        {"(b) batched (B, H, N, d_head), step 2", &y},
        {"(c) fused QKV: d_model -> 3*d_model, chunk", &y_fused},
        {"    headwise::MultiHeadAttention::forward", &y_library},
    };
    double worst_form = 0.0;
    for (const auto& [name, out] : forms) {
        const double diff = max_abs_diff(*out, y);
        worst_form = std::max(worst_form, diff);
        fmt::print("  {:<44} {:<16} {:.2e}\n", name, format_shape(out->shape()), diff);
    }
    fmt::print("  largest difference {:.2e} against a mean |y| of {:.2e}: {}\n", worst_form, typical,
               worst_form <= 1e-5 * std::max(typical, 1e-3) ? "the same up to float rounding" : "THEY DISAGREE");
}

// Returns each head's mean softmax entropy (H) with the sqrt(d_head) scaling.
std::vector<double> step4_which_sqrt(const Tracer& trace, const Sizes& z, const Forward& f) {
    trace.section("step 4: why sqrt(d_head) and not sqrt(d_model)");
    const auto [B, N, d, H, dh] = z;
    const auto& [q_h, k_h, scores, weights] = std::tie(f.q_h, f.k_h, f.scores, f.weights);
    // Each head's q . k sums d_head products, so its variance is about d_head. Dividing by
    // sqrt(d_head) brings it to ~1; dividing by sqrt(d_model) = sqrt(H * d_head) overshoots
    // to ~1/H, and every head's softmax flattens toward uniform.
    const Tensor4 raw = attention_scores(q_h, k_h, 1.0f);                                           // (B, H, N, N)
    const Tensor4 scores_dm = attention_scores(q_h, k_h, 1.0f / std::sqrt(static_cast<float>(d)));  // (B, H, N, N)
    const Tensor4 weights_dm = softmax(scores_dm);                                                  // (B, H, N, N)
    trace("scores / sqrt(d_model)", scores_dm, "B, H, N_query, N_key");
    fmt::print(
        "  variance of q_h . k_h: raw {:.2f} (d_head = {}), / sqrt(d_head) {:.3f}, / sqrt(d_model) {:.3f} (1/H = "
        "{:.3f})\n",
        variance(raw), dh, variance(scores), variance(scores_dm), 1.0 / static_cast<double>(H));
    const double ln_n = std::log(static_cast<double>(N));
    fmt::print("  mean softmax entropy per head (uniform over {} keys = ln {} = {:.3f}; lower = more focused):\n", N, N,
               ln_n);
    fmt::print("    {:<8} {:>14} {:>15}\n", "head", "/ sqrt(d_head)", "/ sqrt(d_model)");
    const std::vector<double> entropy = head_entropies(weights), entropy_dm = head_entropies(weights_dm);
    double mean_dh = 0.0, mean_dm = 0.0;
    for (std::size_t h = 0; h < H; ++h) {
        const double e_dh = entropy[h], e_dm = entropy_dm[h];
        mean_dh += e_dh / static_cast<double>(H);
        mean_dm += e_dm / static_cast<double>(H);
        if (h < 16) fmt::print("    {:<8} {:>14.3f} {:>15.3f}\n", h, e_dh, e_dm);
    }
    if (H > 16) fmt::print("    ... ({} more heads)\n", H - 16);
    fmt::print("    {:<8} {:>14.3f} {:>15.3f}   (max {:.3f})\n", "mean", mean_dh, mean_dm, ln_n);
    fmt::print("  dividing by sqrt(d_model) closes {:.0f}% of the gap to uniform: the heads can barely prefer a key.\n",
               ln_n > mean_dh ? 100.0 * (mean_dm - mean_dh) / (ln_n - mean_dh) : 0.0);
    return entropy;
}

void step5_w_o_mixes(const Tracer& trace, const Sizes& z, const Forward& f, const Tensor2& w_o) {
    trace.section("step 5: what W_O does -- it mixes the heads");
    const auto [B, N, d, H, dh] = z;
    const auto& [concat, y] = std::tie(f.concat, f.y);
    // Without W_O, output dims h*d_head .. belong to head h alone. W_O (d_model, d_model) lets
    // every output dim read from every head.
    trace("without W_O: concat", concat, "B, N, d_model");
    trace("with W_O: y", y, "B, N, d_model");
    const Tensor2 identity = xt::eye<float>(d);  // (d_model, d_model): "no W_O"
    fmt::print("  share of each output block that comes from each head, with W_O:\n");
    const Tensor2 share_with = head_shares(concat, w_o, H);          // (H, H)
    const Tensor2 share_without = head_shares(concat, identity, H);  // (H, H)
    print_share_table(share_with, dh);
    const double diag = xt::amin(xt::diagonal(share_without))();
    const double off = H > 1 ? xt::amax(share_without - xt::diag(xt::diagonal(share_without)))() : 0.0;
    fmt::print("  without W_O the same table is the identity: diagonal >= {:.1f}%, off-diagonal <= {:.1f}%\n",
               100.0 * diag, 100.0 * off);
    // Silence head 0 and count the output features that move.
    Tensor3 muted = concat;  // (B, N, d_model)
    xt::view(muted, xt::all(), xt::all(), xt::range(0, dh)) = 0.0f;
    fmt::print("  silence head 0: {} of {} output features change without W_O, {} of {} with it\n",
               features_changed(concat, muted), d, features_changed(y, linear(muted, w_o)), d);
}

void step6_heat_maps(const Tracer& trace, const Sizes& z, const Tensor4& weights, const std::vector<double>& entropy,
                     const std::vector<std::string>& labels) {
    trace.section("step 6: every head's weights for batch 0, drawn");
    const auto [B, N, d, H, dh] = z;
    const double ln_n = std::log(static_cast<double>(N));
    fmt::print("  rows are queries, columns are keys; {}\n", heatmap_legend(trace.colored()));
    HeatmapOptions look;
    look.color = trace.colored();
    for (std::size_t h = 0; h < std::min<std::size_t>(H, 16); ++h) {
        const Tensor2 w_bh = xt::view(weights, 0, h);  // (N, N)
        fmt::print("\n  head {}   mean entropy {:.3f} of max {:.3f}\n", h, entropy[h], ln_n);
        lesson::print_indented(heatmap(w_bh, labels, labels, look));
    }
    if (H > 16) fmt::print("\n  ... heads 16..{} not drawn\n", H - 1);
}

void step7_cross_attention(const Tracer& trace, Random& rng, const Sizes& z, const Model& m, const Tensor3& q,
                           std::size_t M, const std::vector<std::string>& labels, const std::string& other) {
    trace.section("step 7: cross-attention -- queries from one sequence, keys and values from another");
    const auto [B, N, d, H, dh] = z;
    const auto& [mha, x, w_k, w_v, w_o] = std::tie(m.mha, m.x, m.w_k, m.w_v, m.mha.out_proj_weight);
    HeatmapOptions look;
    look.color = trace.colored();
    const Tensor3 memory = rng.normal<3>({B, M, d});  // (B, M, d_model), e.g. an encoder's output
    trace("x (queries)", x, "B, N, d_model");
    trace("memory (keys, values)", memory, "B, M, d_model");
    const Tensor4 cq = split_heads(q, H);                    // (B, H, N, d_head)
    const Tensor4 ck = split_heads(linear(memory, w_k), H);  // (B, H, M, d_head)
    const Tensor4 cv = split_heads(linear(memory, w_v), H);  // (B, H, M, d_head)
    trace("q_h from x", cq, "B, H, N, d_head");
    trace("k_h from memory", ck, "B, H, M, d_head");
    trace("v_h from memory", cv, "B, H, M, d_head");
    Tensor4 cross_weights;                                                                     // (B, H, N, M)
    const Tensor4 cross_heads = scaled_dot_product_attention(cq, ck, cv, {}, &cross_weights);  // (B, H, N, d_head)
    trace("cross weights", cross_weights, "B, H, N_query, M_key");
    trace("cross heads_out", cross_heads, "B, H, N, d_head");
    const Tensor3 cross_y = linear(merge_heads(cross_heads), w_o);  // (B, N, d_model)
    trace("cross y", cross_y, "B, N, d_model");
    fmt::print("  step by step vs MultiHeadAttention::forward(x, memory, memory): max |diff| = {:.2e}\n",
               max_abs_diff(cross_y, mha.forward(x, memory, memory)));
    fmt::print(
        "  each of the {} queries spreads its weight over the {} memory tokens; the output keeps the\n"
        "  queries' length N = {}. Head 0, batch 0:\n",
        N, M, N);
    lesson::print_indented(heatmap(Tensor2(xt::view(cross_weights, 0, 0)), labels, token_labels(other, M), look));
}

// Every head's weights side by side and each head's entropy, when --save-figures asks for them.
void figures_heads(const Tracer& trace, const Sizes& z, const Tensor4& weights, const std::vector<double>& entropy,
                   const std::vector<std::string>& labels, const std::string& figures_dir) {
    if (figures_dir.empty()) return;
    trace.section("figures: every head's weights side by side, and each head's entropy");
    const auto [B, N, d, H, dh] = z;
    const double ln_n = std::log(static_cast<double>(N));
    std::vector<figure::HeatmapPanel> panels;
    for (std::size_t h = 0; h < std::min<std::size_t>(H, 8); ++h) {
        const Tensor2 w_bh = xt::view(weights, 0, h);  // (N, N)
        panels.push_back({fmt::format("head {}", h), figure::grid_of(w_bh), labels, labels});
    }
    figure::save(figure::heatmaps(
                     fmt::format("Attention weights per head (batch 0, d_model = {}, H = {}, random weights)", d, H),
                     panels, "rows: queries, columns: keys; white = 0, dark blue = 1; each row sums to 1"),
                 figures_dir, "03_heads_heatmaps.png");
    figure::BarChart bars{fmt::format("Mean softmax entropy per head (N = {} keys)", N), "entropy (nats)"};
    for (std::size_t h = 0; h < H; ++h)
        bars.bars.push_back({fmt::format("head {}", h), entropy[h], figure::palette(h)});
    bars.reference = ln_n;
    bars.reference_label = fmt::format("uniform maximum ln {} = {:.3f}", N, ln_n);
    bars.format = [](double v) { return fmt::format("{:.2f}", v); };
    figure::save(figure::bar_chart(bars), figures_dir, "03_head_entropy.png");
}

// Batch 0's heads as a page (--html) and its weights (H, N, N) as .npy (--weights).
void write_head_view(const Sizes& z, std::uint64_t seed, const Forward& f, const Tensor2& w_o,
                     const std::vector<std::string>& labels, const std::string& html, const std::string& weights_npy) {
    if (html.empty() && weights_npy.empty()) return;
    const auto [B, N, d, H, dh] = z;
    const auto& [weights, concat, y] = std::tie(f.weights, f.concat, f.y);
    // The page: one layer of H random heads, each with its measured role, and how far y
    // (batch 0) moves when that head's slice of concat is zeroed -- the cosine to the full y.
    const Tensor3 w_b0 = xt::view(weights, 0);  // (H, N, N)
    std::vector<npy::PendingFile> pending;
    if (!weights_npy.empty()) pending.push_back(npy::stage(weights_npy, w_b0));
    if (!html.empty()) {
        head_view::Data page;
        page.title = fmt::format("lesson 03: {} heads with random weights", H);
        page.subtitle =
            fmt::format("B={} N={} d_model={} H={} seed={}; batch 0, tokens labelled by --sentence", B, N, d, H, seed);
        page.tokens = labels;
        page.weights = {w_b0};
        page.ablation_label = "cosine between y (batch 0) without that head and the full y";
        page.roles.emplace_back();
        page.ablation.emplace_back();
        const Tensor2 y_b0 = xt::view(y, 0);  // (N, d_model)
        for (std::size_t h = 0; h < H; ++h) {
            page.roles[0].push_back(roles::role(xt::view(w_b0, h), N, labels.front(), labels.back()));
            Tensor3 cut = concat;  // (B, N, d_model)
            xt::view(cut, xt::all(), xt::all(), xt::range(h * dh, (h + 1) * dh)) = 0.0f;
            const Tensor2 y_cut = xt::view(linear(cut, w_o), 0);  // (N, d_model)
            page.ablation[0].push_back(bert::cosine(y_cut.data(), y_b0.data(), y_b0.size()));
        }
        pending.emplace_back(html, head_view::render(page));
    }
    for (auto& p : pending) {
        p.commit();
        fmt::print("  wrote {}\n", p.target().string());
    }
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 03: multi-head attention", "03_multi_head"};
    cli::LessonOptions opt;
    std::string text = "the black cat sat on the mat";
    std::string other = "le chat noir s'assit sur le tapis";
    std::size_t M = 7;
    std::string figures_dir, html, weights_npy;
    cli::add_lesson_options(app, opt, "batch,seq,d-model,heads,seed");
    app.add_option("--html", html, "also write batch 0's heads as an interactive page (head view, model view)")
        ->type_name("FILE");
    app.add_option("--weights", weights_npy, "also write batch 0's weights (H, N, N) float32 as .npy")
        ->type_name("FILE");
    lesson::add_save_figures(app, figures_dir, "this lesson's pictures (PNG)");
    app.add_option("--sentence", text, "words that label the tokens in the heat maps")->capture_default_str();
    lesson::add_bounded_option(app, "--cross-seq", M, "length M of the second sequence in the cross-attention step", 1,
                               4096);
    return lesson::run(app, argc, argv, [&] {
        const std::size_t B = opt.dims.batch, N = opt.dims.seq, d = opt.dims.d_model, H = opt.dims.heads;
        cli::require_divisible(d, H);
        const Sizes z{B, N, d, H, d / H};
        const Tracer trace(!opt.quiet);
        Random rng(opt.seed);
        fmt::print("Lesson 03: multi-head attention   B={} N={} d_model={} H={} d_head={} seed={}\n", B, N, d, H, z.dh,
                   opt.seed);
        const Model model = step1_module(trace, rng, z);
        const Forward f = step2_batched(trace, z, model);
        step3_three_ways(trace, z, model, f.y);
        const std::vector<double> entropy = step4_which_sqrt(trace, z, f);
        step5_w_o_mixes(trace, z, f, model.mha.out_proj_weight);
        const auto labels = token_labels(text, N);
        step6_heat_maps(trace, z, f.weights, entropy, labels);
        step7_cross_attention(trace, rng, z, model, f.q, M, labels, other);
        figures_heads(trace, z, f.weights, entropy, labels, figures_dir);
        write_head_view(z, opt.seed, f, model.mha.out_proj_weight, labels, html, weights_npy);
        return cli::exit_ok;
    });
}
