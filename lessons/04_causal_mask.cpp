// Lesson 04 -- the causal mask.
//
// A model that writes text one token at a time must not read ahead while it is trained: token i
// may attend to tokens 0..i and never to i+1 and later. The causal mask enforces that by removing
// the upper triangle of every (N, N) score matrix *before* softmax, so the forbidden keys get
// weight exactly 0 and the remaining weights still sum to 1:
//
//     weights = softmax(q k^T / sqrt(d_head) + mask),   mask(i, j) = 0 if j <= i, -inf if j > i
//
// This file builds the mask, applies it two ways, proves causality by changing a future token,
// walks through the classic ways to get it wrong, and ends with padding masks for batches of
// sequences of different lengths.
//
// Dimension letters: B = batch, N = tokens, H = heads, d_head = d_model / H.
// Run:  ./headwise run 4      or      build/lessons/04_causal_mask --help

#include "headwise/reference/batched.hpp"
#include "headwise/io/figure.hpp"
#include "headwise/lesson/lesson.hpp"

#include <cmath>
#include <cstring>
#include <limits>

using namespace headwise;

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------------------------------------
// Step helpers.

// A small matrix as a grid of numbers ("-inf" where it is), at most 8 x 8.
void print_matrix(const Tensor2& m, int decimals) {
    const std::size_t rows = std::min<std::size_t>(m.shape()[0], 8), cols = std::min<std::size_t>(m.shape()[1], 8);
    for (std::size_t i = 0; i < rows; ++i) {
        fmt::print("    ");
        for (std::size_t j = 0; j < cols; ++j) fmt::print(" {:>7.{}f}", m(i, j), decimals);
        fmt::print("{}\n", cols < m.shape()[1] ? "  ..." : "");
    }
    if (rows < m.shape()[0]) fmt::print("     ...\n");
}

// A boolean mask as a grid: 'x' = masked (hidden), '.' = visible; rows named `row` 0, 1, ...
void print_mask(const Mask2& m, std::string_view row) {
    const std::size_t rows = std::min<std::size_t>(m.shape()[0], 16), cols = std::min<std::size_t>(m.shape()[1], 16);
    for (std::size_t i = 0; i < rows; ++i) {
        fmt::print("     {} {:<3}", row, i);
        for (std::size_t j = 0; j < cols; ++j) fmt::print(" {}", m(i, j) ? 'x' : '.');
        fmt::print("{}\n", cols < m.shape()[1] ? " ..." : "");
    }
    if (rows < m.shape()[0]) fmt::print("     ...\n");
}

Tensor2 slice(const Tensor4& t, std::size_t b, std::size_t h) { return xt::view(t, b, h); }

bool bit_identical(const auto& a, const auto& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Largest |difference| at one position n of two (B, N, d_model) outputs, over batch and features.
double diff_at(const Tensor3& a, const Tensor3& b, std::size_t n) {
    return max_abs_diff(xt::eval(xt::view(a, xt::all(), n)), xt::eval(xt::view(b, xt::all(), n)));
}

// Total weight that rows put on keys they are not allowed to see (j > i), over all rows.
double weight_on_future(const Tensor4& w) {
    const std::size_t n = w.shape()[2];
    double s = 0.0;
    for (std::size_t bh = 0; bh < w.shape()[0] * w.shape()[1]; ++bh)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = i + 1; j < n; ++j) s += w.data()[(bh * n + i) * n + j];
    return s;
}

// The sizes every step reads: batch, tokens, d_model, heads, d_head = d_model / H.
struct Sizes {
    std::size_t B, N, d, H, dh;
};

// ---------------------------------------------------------------------------------------------
// The steps, in the order the lesson tells them.

// The causal mask, boolean and additive, each (N, N).
struct CausalMask {
    Mask2 mask;        // (N, N), true above the diagonal = "may not look"
    Tensor2 additive;  // (N, N): 0 where visible, -inf where hidden
};

CausalMask step1_mask(const Tracer& trace, const Sizes& z) {
    trace.section("step 1: the mask -- one (N, N) matrix, the same for every batch element and head");
    const std::size_t N = z.N;
    const Mask2 mask = causal_mask(N);  // (N, N), true above the diagonal = "may not look"
    trace("causal mask (bool)", mask, "N_query, N_key");
    fmt::print("  x = hidden, . = visible; query i sees keys 0..i:\n");
    print_mask(mask, "query");
    const Tensor2 additive = xt::where(mask, neg_inf, 0.0f);  // (N, N): 0 where visible, -inf where hidden
    trace("causal mask (additive)", additive, "N_query, N_key");
    print_matrix(additive, 0);
    return {mask, additive};
}

// What step 2 computes and later steps reuse.
struct Attended {
    MultiHeadAttention mha;
    Tensor3 x;                // (B, N, d_model)
    Tensor4 q, k, v;          // (B, H, N, d_head)
    Tensor4 scores;           // (B, H, N, N), unmasked
    Tensor4 weights_add;      // (B, H, N, N), softmax(scores + mask)
    AttentionOptions causal;  // causal = true
};

Attended step2_broadcast(const Tracer& trace, Random& rng, const Sizes& z, const CausalMask& cm) {
    trace.section("step 2: scores for every (batch, head), then the mask broadcast over (B, H)");
    const auto [B, N, d, H, dh] = z;
    const Mask2& mask = cm.mask;
    const Tensor2& additive = cm.additive;
    // PyTorch's initial weights scaled by sqrt(3) to variance 1/d_model, so q and k entries have
    // variance ~1 and the weights show some structure (lesson 03, step 1).
    MultiHeadAttention mha = MultiHeadAttention::random(d, H, /*bias=*/false, rng);
    mha.in_proj_weight *= std::sqrt(3.0f);       // (3 d_model, d_model)
    const Tensor3 x = rng.normal<3>({B, N, d});  // (B, N, d_model)
    trace("x", x, "B, N, d_model");
    const Tensor4 q = split_heads(linear(x, xt::view(mha.in_proj_weight, xt::range(0, d))), H);  // (B, H, N, d_head)
    const Tensor4 k =
        split_heads(linear(x, xt::view(mha.in_proj_weight, xt::range(d, 2 * d))), H);  // (B, H, N, d_head)
    const Tensor4 v =
        split_heads(linear(x, xt::view(mha.in_proj_weight, xt::range(2 * d, 3 * d))), H);  // (B, H, N, d_head)
    trace("q", q, "B, H, N, d_head");
    trace("k", k, "B, H, N, d_head");
    trace("v", v, "B, H, N, d_head");
    const Tensor4 scores = attention_scores(q, k, 1.0f / std::sqrt(static_cast<float>(dh)));  // (B, H, N, N)
    trace("scores", scores, "B, H, N_query, N_key");
    const Tensor4 broadcast = xt::broadcast(additive, std::array<std::size_t, 4>{B, H, N, N});  // (B, H, N, N)
    trace("mask broadcast", broadcast, "B, H, N_query, N_key");
    fmt::print("  (a broadcast copies nothing in practice: the (N, N) mask is read for every (b, h))\n");

    // (a) additive: scores + mask, so hidden scores become -inf and exp(-inf) = 0.
    const Tensor4 masked_add = scores + additive;  // (B, H, N, N), additive broadcast over (B, H)
    trace("scores + mask", masked_add, "B, H, N_query, N_key");
    const Tensor4 weights_add = softmax(masked_add);  // (B, H, N, N)
    trace("softmax(scores + mask)", weights_add, "B, H, N_query, N_key");
    // (b) boolean: overwrite the hidden scores with -inf (PyTorch's masked_fill).
    const Tensor4 masked_fill = xt::where(xt::broadcast(mask, scores.shape()), neg_inf, scores);  // (B, H, N, N)
    const Tensor4 weights_bool = softmax(masked_fill);                                            // (B, H, N, N)
    trace("softmax(masked_fill)", weights_bool, "B, H, N_query, N_key");
    fmt::print("  additive vs boolean mask: weights {}\n",
               bit_identical(weights_add, weights_bool)
                   ? "bit-identical"
                   : fmt::format("differ by {:.2e}", max_abs_diff(weights_add, weights_bool)));
    AttentionOptions causal;
    causal.causal = true;
    Tensor4 weights_lib;                                                                    // (B, H, N, N)
    const Tensor4 heads_lib = scaled_dot_product_attention(q, k, v, causal, &weights_lib);  // (B, H, N, d_head)
    fmt::print("  vs headwise::scaled_dot_product_attention(causal): max |diff| = {:.2e}\n",
               max_abs_diff(weights_add, weights_lib));
    const Tensor4 heads_out = apply_weights(weights_add, v);  // (B, H, N, d_head)
    trace("weights . v", heads_out, "B, H, N, d_head");
    fmt::print("  outputs vs the library: max |diff| = {:.2e}\n", max_abs_diff(heads_out, heads_lib));
    return {mha, x, q, k, v, scores, weights_add, causal};
}

void step3_weights(const Tracer& trace, const Sizes& z, const CausalMask& cm, const Attended& a) {
    trace.section("step 3: what the mask does to the weights");
    const auto [B, N, d, H, dh] = z;
    const Tensor2& additive = cm.additive;
    const Tensor4& weights_add = a.weights_add;
    fmt::print("  batch 0, head 0:\n");
    print_matrix(slice(weights_add, 0, 0), 4);
    std::size_t row0_alone = 0;
    for (std::size_t bh = 0; bh < B * H; ++bh) row0_alone += weights_add.data()[bh * N * N] == 1.0f;
    const Tensor3 row_sums = xt::sum(weights_add, {3});  // (B, H, N)
    fmt::print(
        "  row 0 puts weight exactly 1 on itself in {} of {} (batch, head) pairs; total weight on hidden keys: "
        "{};\n"
        "  largest |row sum - 1|: {:.2e}\n",
        row0_alone, B * H, weight_on_future(weights_add), static_cast<double>(xt::amax(xt::abs(row_sums - 1.0f))()));
    // With every score equal, softmax spreads each row evenly over what it may see.
    const Tensor4 equal = xt::zeros<float>({std::size_t{1}, std::size_t{1}, N, N});  // (1, 1, N, N)
    const Tensor4 even = softmax(Tensor4(equal + additive));                         // (1, 1, N, N)
    fmt::print("  with all scores equal, row i is 1/(i+1) over keys 0..i:\n");
    double worst = 0.0;
    for (std::size_t i = 0; i < N; ++i) {
        worst = std::max(worst, std::abs(double(even(0, 0, i, 0)) - 1.0 / double(i + 1)));
        if (i < 6) fmt::print("    row {}: {:.4f} x {} = 1/{}\n", i, even(0, 0, i, 0), i + 1, i + 1);
    }
    fmt::print("    largest |weight - 1/(i+1)| over {} rows: {:.2e}\n", N, worst);
}

void step4_causality(const Tracer& trace, Random& rng, const Sizes& z, const Attended& a, std::size_t changed) {
    trace.section(fmt::format("step 4: causality, proven -- change token {} and compare every position", changed));
    const auto [B, N, d, H, dh] = z;
    const auto& [mha, x, causal] = std::tie(a.mha, a.x, a.causal);
    Tensor3 x2 = x;  // (B, N, d_model)
    xt::view(x2, xt::all(), changed) = rng.normal<2>({B, d});
    trace(fmt::format("x, token {} changed", changed), x2, "B, N, d_model");
    const Tensor3 y = mha.forward(x, causal);    // (B, N, d_model)
    const Tensor3 y2 = mha.forward(x2, causal);  // (B, N, d_model)
    const Tensor3 y_open = mha.forward(x);       // (B, N, d_model), no mask
    const Tensor3 y2_open = mha.forward(x2);     // (B, N, d_model)
    trace("y (causal)", y, "B, N, d_model");
    fmt::print("    {:<10} {:<28} {}\n", "position", "with the causal mask", "without a mask");
    std::size_t identical_before = 0, changed_after = 0;
    for (std::size_t n = 0; n < N; ++n) {
        const Tensor2 a = xt::view(y, xt::all(), n), b = xt::view(y2, xt::all(), n);  // (B, d_model)
        const bool same = bit_identical(a, b);
        identical_before += n < changed && same;
        changed_after += n >= changed && !same;
        if (n < 12 || n + 1 == N) {
            fmt::print("    {:<10} {:<28} max |diff| {:.2e}\n", n,
                       same ? std::string("bit-identical") : fmt::format("max |diff| {:.2e}", diff_at(y, y2, n)),
                       diff_at(y_open, y2_open, n));
        }
    }
    fmt::print("  with the mask: {} of {} positions before {} are bit-identical, {} of {} from {} on changed\n",
               identical_before, changed, changed, changed_after, N - changed, changed);
}

// Returns the unmasked weights softmax(scores) (B, H, N, N), which the figure draws.
Tensor4 step5_mistakes(const Tracer& trace, const Sizes& z, const CausalMask& cm, const Attended& a) {
    trace.section("step 5: four ways to get it wrong");
    const auto [B, N, d, H, dh] = z;
    const Mask2& mask = cm.mask;
    const auto& [q, k, v, scores, weights_add] = std::tie(a.q, a.k, a.v, a.scores, a.weights_add);
    const Tensor4 plain = softmax(scores);  // (B, H, N, N), no mask at all
    // (1) Masking after softmax: the weights were already normalised over all keys.
    const Tensor4 after = plain * xt::cast<float>(!xt::broadcast(mask, plain.shape()));  // (B, H, N, N)
    trace("softmax, then mask", after, "B, H, N_query, N_key");
    const Tensor3 after_row_sums = xt::sum(after, {3});         // (B, H, N)
    const Tensor1 after_sums = xt::view(after_row_sums, 0, 0);  // (N): batch 0, head 0
    fmt::print("  (1) mask after softmax: row sums for batch 0, head 0:");
    for (std::size_t i = 0; i < std::min<std::size_t>(N, 8); ++i) fmt::print(" {:.3f}", after_sums(i));
    fmt::print("{} -- no longer 1\n", N > 8 ? " ..." : "");
    // (2) 0 instead of -inf.
    const Tensor2 zeros_mask = xt::where(mask, 0.0f, 0.0f);            // (N, N): "masked" entries set to 0
    const Tensor4 w_zero_add = softmax(Tensor4(scores + zeros_mask));  // (B, H, N, N)
    const Tensor4 w_zero_fill =                                        // (B, H, N, N)
        softmax(Tensor4(xt::where(xt::broadcast(mask, scores.shape()), 0.0f, scores)));
    fmt::print(
        "  (2) 0 instead of -inf: an additive mask of zeros changes nothing (vs no mask: {});\n"
        "      filling hidden scores with 0 leaves exp(0) = 1 for them: {:.3f} of each row's weight goes to\n"
        "      hidden keys on average (with -inf: {})\n",
        bit_identical(w_zero_add, plain) ? "bit-identical"
                                         : fmt::format("max |diff| {:.2e}", max_abs_diff(w_zero_add, plain)),
        weight_on_future(w_zero_fill) / double(B * H * N), weight_on_future(weights_add));
    // (3) A mask of the wrong shape: a (B, N) padding mask passed where an (N, N) mask belongs.
    Mask2 wrong = Mask2::from_shape({B, N});  // (B, N)
    wrong.fill(false);
    AttentionOptions misuse;
    misuse.attn_mask = &wrong;
    if (B != N) {
        try {
            scaled_dot_product_attention(q, k, v, misuse);
            fmt::print("  (3) a (B, N) mask passed as attn_mask was accepted (this should not happen)\n");
        } catch (const usage_error& e) {
            fmt::print("  (3) a (B, N) = ({}, {}) mask passed as attn_mask is refused: \"{}\"\n", B, N, e.what());
        }
    } else {
        fmt::print(
            "  (3) here B = N = {}, so a (B, N) padding mask has the shape of an (N, N) mask and would be\n"
            "      accepted silently: shape checks catch a wrong mask only when the sizes differ\n",
            N);
    }
    // (4) The triangle the wrong way round: query i sees keys i..N-1 -- the future.
    const Mask2 flipped = xt::transpose(mask);  // (N, N)
    AttentionOptions flipped_opt;
    flipped_opt.attn_mask = &flipped;
    Tensor4 w_flipped;  // (B, H, N, N)
    scaled_dot_product_attention(q, k, v, flipped_opt, &w_flipped);
    const Tensor1 flipped_row0 = xt::view(w_flipped, 0, 0, 0);  // (N_key)
    fmt::print("  (4) the transposed mask: row 0 now spreads its weight over {} keys, the last row sees only itself\n",
               std::count_if(flipped_row0.begin(), flipped_row0.end(), [](float w) { return w > 0.0f; }));
    return plain;
}

void step6_padding(const Tracer& trace, const Sizes& z, const Attended& a) {
    trace.section("step 6: padding -- a batch of sequences of different lengths");
    const auto [B, N, d, H, dh] = z;
    const auto& [q, k, v] = std::tie(a.q, a.k, a.v);
    // Shorter sequences are padded to N; a key padding mask (B, N) hides the padding from every
    // query. Lengths here: N, N-2, N-4, ... (at least 1).
    Mask2 padding = Mask2::from_shape({B, N});  // (B, N), true = padding
    std::vector<std::size_t> length(B);
    for (std::size_t b = 0; b < B; ++b) {
        length[b] = N > 2 * b ? N - 2 * b : 1;
        for (std::size_t j = 0; j < N; ++j) padding(b, j) = j >= length[b];
    }
    trace("key padding mask", padding, "B, N_key");
    fmt::print("  x = padding:\n");
    print_mask(padding, "batch");
    AttentionOptions padded;
    padded.key_padding_mask = &padding;
    Tensor4 w_pad;  // (B, H, N, N)
    scaled_dot_product_attention(q, k, v, padded, &w_pad);
    trace("weights with padding", w_pad, "B, H, N_query, N_key");
    const std::size_t last = B - 1;
    fmt::print("  batch {} (length {}), head 0: the padded columns get 0\n", last, length[last]);
    print_matrix(slice(w_pad, last, 0), 4);
    // A row whose keys are ALL hidden: the textbook softmax divides 0 by 0.
    Mask2 everything = Mask2::from_shape({B, N});  // (B, N)
    everything.fill(true);
    AttentionOptions all_hidden;
    all_hidden.key_padding_mask = &everything;
    Tensor4 w_none;                                                                       // (B, H, N, N)
    const Tensor4 out_none = scaled_dot_product_attention(q, k, v, all_hidden, &w_none);  // (B, H, N, d_head)
    trace("output, all keys hidden", out_none, "B, H, N, d_head");
    const float m = neg_inf;
    const float textbook = std::exp(neg_inf - m) / (static_cast<float>(N) * std::exp(neg_inf - m));
    fmt::print(
        "  every key hidden: a textbook softmax gives exp(-inf - max) / sum = {} (0/0); headwise defines the\n"
        "  row instead: weights sum to {}, largest |output| = {}, NaNs: {}\n",
        std::isnan(textbook) ? std::string("NaN") : fmt::format("{}", textbook),
        static_cast<double>(xt::amax(xt::sum(w_none, {3}))()), static_cast<double>(xt::amax(xt::abs(out_none))()),
        std::count_if(out_none.begin(), out_none.end(), [](float o) { return std::isnan(o); }));
    fmt::print(
        "  so a fully padded query gets zero weights and a zero output (the output projection then\n"
        "  returns just its bias), never NaN.\n");
}

// The mask and the weights of batch 0, head 0 with and without it, when --save-figures asks.
void figure_mask(const Tracer& trace, std::size_t N, const Mask2& mask, const Tensor4& weights_add,
                 const Tensor4& plain, const std::string& figures_dir) {
    if (figures_dir.empty()) return;
    trace.section("figure: the mask, the weights without it and with it");
    // Hidden cells are NaN in the picture (drawn hatched); the weights there are exactly 0.
    const Tensor2 hidden = xt::where(mask, std::numeric_limits<float>::quiet_NaN(), 0.0f);  // (N, N)
    const Tensor2 masked =
        xt::where(mask, std::numeric_limits<float>::quiet_NaN(), slice(weights_add, 0, 0));  // (N, N)
    const std::vector<figure::HeatmapPanel> panels{
        {"causal mask (hatched = -inf)", figure::grid_of(hidden), {}, {}},
        {"weights without the mask", figure::grid_of(slice(plain, 0, 0)), {}, {}},
        {"weights with the mask", figure::grid_of(masked), {}, {}},
    };
    figure::save(
        figure::heatmaps(fmt::format("The causal mask (N = {}), batch 0, head 0", N), panels,
                         "rows: queries i, columns: keys j; hatched: j > i, weight exactly 0; row 0 sees only itself"),
        figures_dir, "04_causal_mask.png");
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 04: the causal mask", "04_causal_mask"};
    cli::LessonOptions opt;
    std::size_t changed = 0;
    std::string figures_dir;
    cli::add_lesson_options(app, opt, "batch,seq,d-model,heads,seed");
    lesson::add_save_figures(app, figures_dir, "this lesson's picture (PNG)");
    app.add_option("--changed-token", changed, "the token j changed to prove causality (default: the middle one)")
        ->check_range(0, 4095);
    return lesson::run(app, argc, argv, [&] {
        const std::size_t B = opt.dims.batch, N = opt.dims.seq, d = opt.dims.d_model, H = opt.dims.heads;
        cli::require_divisible(d, H);
        const Sizes z{B, N, d, H, d / H};
        if (app.count("--changed-token") == 0) changed = N / 2;
        if (changed >= N) {
            throw usage_error(fmt::format("--changed-token {} is out of range: the sequence has --seq {} tokens, 0..{}",
                                          changed, N, N - 1));
        }
        const Tracer trace(!opt.quiet);
        Random rng(opt.seed);
        fmt::print("Lesson 04: the causal mask   B={} N={} d_model={} H={} d_head={} seed={}\n", B, N, d, H, z.dh,
                   opt.seed);
        const CausalMask cm = step1_mask(trace, z);
        const Attended a = step2_broadcast(trace, rng, z, cm);
        step3_weights(trace, z, cm, a);
        step4_causality(trace, rng, z, a, changed);
        const Tensor4 plain = step5_mistakes(trace, z, cm, a);
        step6_padding(trace, z, a);
        figure_mask(trace, N, cm.mask, a.weights_add, plain, figures_dir);
        return cli::exit_ok;
    });
}
