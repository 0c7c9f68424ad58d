// Lesson 09 -- where is each token? Permutation, sinusoids, learned positions, RoPE and ALiBi.
//
// Every lesson so far computed attention that cannot tell word order: the scores compare every
// query with every key, whatever their places. Permute the tokens and each output row moves with
// its token, unchanged. This file measures that, then walks through the answers models give:
//
//   - sinusoids added to x (the original Transformer): a fixed table, any length;
//   - a learned table (GPT-2): one trained row per position, and nothing past the last;
//   - RoPE (Llama, Mistral, Qwen, GPT-NeoX): q and k rotated by their positions, so that a score
//     depends only on the distance between query and key; two layouts of the rotated pairs;
//   - ALiBi (BLOOM, MPT): no embedding at all, a penalty on scores growing with the distance;
//
// and ends where lesson 08 stopped: RoPE with a KV cache. Everything it computes lives in
// src/headwise/reference/positions.hpp, src/headwise/reference/layer.hpp (the layer told positions)
// and src/headwise/inference/kv_cache.hpp (RoPE with the cache).
//
// Dimension letters: B = batch, N = tokens, H = heads, d_head = d_model / H, H_kv = key/value heads.
// Run:  ./headwise run 9      or      build/lessons/09_positions --help

#include "headwise/inference/kv_cache.hpp"
#include "headwise/reference/batched.hpp"
#include "headwise/io/figure.hpp"
#include "headwise/lesson/lesson.hpp"
#include "headwise/reference/positions.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <vector>

using namespace headwise;

namespace {

// Tokens of x (B, N, d_model) in the order `order`: row n of the result is row order[n] of x.
Tensor3 reorder(const Tensor3& x, const std::vector<std::size_t>& order) {
    Tensor3 y = Tensor3::from_shape({x.shape()[0], order.size(), x.shape()[2]});
    for (std::size_t n = 0; n < order.size(); ++n)
        xt::view(y, xt::all(), n, xt::all()) = xt::view(x, xt::all(), order[n], xt::all());
    return y;
}

// Tokens [from, to) of x (B, N, d_model).
Tensor3 tokens(const Tensor3& x, std::size_t from, std::size_t to) {
    return xt::view(x, xt::all(), xt::range(from, to), xt::all());
}

// q_m . k_n of batch 0, head 0.
double score(const Tensor4& q, std::size_t m, const Tensor4& k, std::size_t n) {
    double s = 0.0;
    for (std::size_t c = 0; c < q.shape()[3]; ++c) s += double(q(0, 0, m, c)) * double(k(0, 0, n, c));
    return s;
}

// One (d_head) vector at every position 0 .. n - 1: (1, 1, N, d_head).
Tensor4 at_every_position(const Tensor4& v, std::size_t n) {
    Tensor4 x = Tensor4::from_shape({1, 1, n, v.shape()[3]});
    for (std::size_t t = 0; t < n; ++t) xt::view(x, 0, 0, t) = xt::view(v, 0, 0, 0);
    return x;
}

// The RoPE score of q = k = (1, 1, ..., 1) at distance `distance`, over its value at distance 0:
// (2 / d_head) sum_i cos(distance theta_i) -- the envelope RoFormer plots (its section 3.4.3).
double envelope(std::size_t d_head, double base, double distance) {
    double s = 0.0;
    for (const double theta : rope_frequencies(d_head, base)) s += std::cos(distance * theta);
    return s / double(d_head / 2);
}

// A table's wavelength, in positions, of the pair rotating at `theta` radians per position.
double wavelength(double theta) { return 2.0 * std::numbers::pi / theta; }

std::string positions_text(double p) {
    if (p >= 1e6) return fmt::format("{:.2f} M", p / 1e6);
    if (p >= 1e4) return fmt::format("{:.1f} k", p / 1e3);
    return fmt::format("{:.1f}", p);
}

// The order N-1, ..., 1, 0: the sentence read backwards.
std::vector<std::size_t> backwards(std::size_t n) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::reverse(order.begin(), order.end());
    return order;
}

// RoPE as the lesson uses it: base 10,000, the half layout of Hugging Face's Llama.
const Rope rope;

// The sizes every step reads: batch, tokens, d_model, heads, d_head = d_model / H.
struct Sizes {
    std::size_t B, N, d, H, dh;
};

// ---------------------------------------------------------------------------------------------
// The steps, in the order the lesson tells them.

// The attention layer of lessons 03-05, weights scaled as in lesson 04 (scores with structure),
// and its input.
struct Layer {
    MultiHeadAttention mha;  // in_proj (3 d_model, d_model)
    Tensor3 x;               // (B, N, d_model)
};

Layer the_layer(Random& rng, const Sizes& z) {
    MultiHeadAttention mha = MultiHeadAttention::random(z.d, z.H, /*bias=*/true, rng);
    mha.in_proj_weight *= std::sqrt(3.0f);             // (3 d_model, d_model)
    const Tensor3 x = rng.normal<3>({z.B, z.N, z.d});  // (B, N, d_model)
    return {mha, x};
}

void step1_blind_to_order(const Tracer& trace, const Sizes& z, const Layer& layer, const AttentionOptions& causal) {
    trace.section("step 1: attention is blind to order -- permute the tokens, the outputs permute with them");
    const std::size_t N = z.N;
    const auto& [mha, x] = std::tie(layer.mha, layer.x);
    std::vector<std::size_t> order(N);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::reverse(order.begin(), order.end());  // the sentence read backwards
    const Tensor3 x_perm = reorder(x, order);  // (B, N, d_model)
    trace("x", x, "B, N, d_model");
    trace("x reversed", x_perm, "B, N, d_model");
    const Tensor3 y = mha.forward(x);               // (B, N, d_model)
    const Tensor3 y_of_perm = mha.forward(x_perm);  // (B, N, d_model)
    trace("y = attention(x)", y, "B, N, d_model");
    fmt::print("  attention(reversed x) vs reversed attention(x): max |diff| = {:.1e} -- same rows, moved\n",
               max_abs_diff(y_of_perm, reorder(y, order)));
    const Tensor3 yc = mha.forward(x, causal);
    fmt::print("  with the causal mask: max |diff| = {:.2f} -- token n now sees a different set of tokens\n",
               max_abs_diff(mha.forward(x_perm, causal), reorder(yc, order)));
    // Reverse only the first tokens: every later token still sees the same SET of tokens.
    if (N >= 3) {
        const std::size_t r = std::max<std::size_t>(2, N / 2);  // tokens 0..r-1 reversed, r < N
        std::vector<std::size_t> prefix_order(N);
        std::iota(prefix_order.begin(), prefix_order.end(), std::size_t{0});
        std::reverse(prefix_order.begin(), prefix_order.begin() + std::ptrdiff_t(r));
        const Tensor3 yc_prefix = mha.forward(reorder(x, prefix_order), causal);  // (B, N, d_model)
        fmt::print(
            "  the mask breaks the symmetry only partly: reverse tokens 0..{} alone, and tokens {}..{} move by\n"
            "  {:.1e} (each sees the same set of tokens, in another order, and cannot tell); tokens 0..{}\n"
            "  change by {:.2f} (each now sees a different set). Order inside a token's past stays invisible.\n",
            r - 1, r, N - 1, max_abs_diff(tokens(yc_prefix, r, N), tokens(yc, r, N)), r - 1,
            max_abs_diff(tokens(yc_prefix, 0, r), tokens(reorder(yc, prefix_order), 0, r)));
    }
}

void step2_sinusoids(const Tracer& trace, const Sizes& z, const Layer& layer) {
    trace.section("step 2: sinusoidal encodings (Vaswani et al.) -- a fixed table added to x");
    const auto [B, N, d, H, dh] = z;
    const auto& [mha, x] = std::tie(layer.mha, layer.x);
    const std::vector<std::size_t> order = backwards(N);
    const Tensor2 pe = sinusoidal_table(N, d);  // (N, d_model)
    trace("PE", pe, "N, d_model");
    const Tensor3 x_pe = x + pe;  // (B, N, d_model): broadcast over B
    trace("x + PE", x_pe, "B, N, d_model");
    fmt::print("  PE[p, 2i] = sin(p w_i), PE[p, 2i+1] = cos(p w_i), w_i = 10000^(-2i/d_model)\n");
    fmt::print("  with positions added, order shows: attention(x + PE) on reversed tokens vs reversed: {:.2f}\n",
               max_abs_diff(mha.forward(reorder(x, order) + pe), reorder(mha.forward(x_pe), order)));
    const Tensor2 pe_long = sinusoidal_table(200, d);  // (200, d_model)
    fmt::print("  PE[p] . PE[p + k] = sum_i cos(k w_i): the same for every p, only the distance k counts\n");
    fmt::print("    {:>6} {:>10} {:>10} {:>10} {:>10}\n", "k", "p = 0", "p = 10", "p = 50", "p = 150");
    for (const std::size_t k : {0u, 1u, 4u, 16u, 40u}) {
        fmt::print("    {:>6}", k);
        for (const std::size_t p : {0u, 10u, 50u, 150u})
            fmt::print(" {:>10.4f}", double(xt::sum(xt::view(pe_long, p) * xt::view(pe_long, p + k))()));
        fmt::print("\n");
    }
    fmt::print("  wavelengths: pair 0 repeats every {:.2f} positions, pair {} every {} (a clock with {} hands)\n",
               wavelength(1.0), d / 2 - 1, positions_text(wavelength(std::pow(10000.0, -double(d - 2) / double(d)))),
               d / 2);
}

void step3_learned_table(const Tracer& trace, Random& rng, const Sizes& z, std::size_t max_positions) {
    trace.section(
        fmt::format("step 3: learned absolute positions (GPT-2) -- a table of {} trained rows", max_positions));
    const auto [B, N, d, H, dh] = z;
    const Tensor2 wpe = rng.normal<2>({max_positions, d}, 0.02f);  // (L_max, d_model), trained in a model
    trace("wpe", wpe, "L_max, d_model");
    const std::size_t fits = std::min(N, max_positions);
    const Tensor2 rows = xt::view(wpe, xt::range(0, fits), xt::all());  // (N, d_model)
    trace("wpe[0..N)", rows, "N, d_model");
    if (N > max_positions) {
        fmt::print("  this run's {} tokens: positions {}..{} have no row, a model with this table cannot take them\n",
                   N, max_positions, N - 1);
    }
    const std::size_t longer = max_positions + 4;
    fmt::print(
        "  a sequence of {} tokens needs rows 0..{}: the table ends at row {}. GPT-2 (n_positions = 1024)\n"
        "  refuses longer inputs; rows near the end were trained on few examples. Sinusoids and RoPE have\n"
        "  a value for every position, and ALiBi needs none.\n",
        longer, longer - 1, max_positions - 1);
}

// The heads' q, k, v of step 4, q and k rotated, and one q vector (batch 0, head 0, token 0).
struct Rotated {
    Tensor4 q, k, v;       // (B, H, N, d_head)
    Tensor4 q_rot, k_rot;  // (B, H, N, d_head)
    Tensor4 q1;            // (1, 1, 1, d_head)
};

Rotated step4_rope(const Tracer& trace, const Sizes& z, const Layer& layer, const AttentionOptions& causal) {
    trace.section("step 4: RoPE -- rotate each pair of q and k dimensions by position x theta_i");
    const auto [B, N, d, H, dh] = z;
    const auto& [mha, x] = std::tie(layer.mha, layer.x);
    const Tensor4 q = split_heads(linear(x, xt::view(mha.in_proj_weight, xt::range(0, d), xt::all()),
                                         xt::view(mha.in_proj_bias, xt::range(0, d))),
                                  H);  // (B, H, N, d_head)
    const Tensor4 k = split_heads(linear(x, xt::view(mha.in_proj_weight, xt::range(d, 2 * d), xt::all()),
                                         xt::view(mha.in_proj_bias, xt::range(d, 2 * d))),
                                  H);  // (B, H, N, d_head)
    trace("q", q, "B, H, N, d_head");
    trace("k", k, "B, H, N, d_head");
    const Tensor4 q_rot = apply_rope(q, rope), k_rot = apply_rope(k, rope);  // (B, H, N, d_head)
    trace("q rotated", q_rot, "B, H, N, d_head");
    trace("k rotated", k_rot, "B, H, N, d_head");
    const std::vector<double> theta = rope_frequencies(dh, rope.base);
    fmt::print("  theta_i = 10000^(-2i/d_head): theta_0 = {:.3g}, theta_1 = {:.3g}, theta_{} = {:.3g} rad/position\n",
               theta[0], theta[1], theta.size() - 1, theta.back());
    fmt::print("  rotations keep lengths: |q rotated| - |q| = {:.1e}\n",
               std::abs(std::sqrt(double(xt::sum(xt::square(q_rot))())) - std::sqrt(double(xt::sum(xt::square(q))()))));
    // One q vector and one k vector, placed at every position 0..63.
    const std::size_t span = 64, other = std::min<std::size_t>(1, N - 1);  // k of token 1 (0 if N = 1)
    const Tensor4 q1 = xt::view(q, xt::range(0, 1), xt::range(0, 1), xt::range(0, 1), xt::all());  // (1, 1, 1, d_head)
    const Tensor4 k1 = xt::view(k, xt::range(0, 1), xt::range(0, 1), xt::range(other, other + 1), xt::all());
    const Tensor4 qs = apply_rope(at_every_position(q1, span), rope);  // (1, 1, 64, d_head)
    const Tensor4 ks = apply_rope(at_every_position(k1, span), rope);
    double worst_shift = 0.0;
    for (std::size_t m = 0; m + 32 < span; ++m)
        for (std::size_t n = 0; n + 32 < span; ++n)
            for (const std::size_t t : {1u, 5u, 31u})
                worst_shift = std::max(worst_shift, std::abs(score(qs, m + t, ks, n + t) - score(qs, m, ks, n)));
    fmt::print(
        "  the same q and k at positions (m, n) and (m + t, n + t), t in {{1, 5, 31}}: max |score diff| = {:.1e}\n",
        worst_shift);
    fmt::print("  the score q_m . k_n by distance m - n (unrotated: {:.3f}):", score(q, 0, k, other));
    for (const std::size_t dist : {0u, 1u, 2u, 4u, 8u, 16u, 32u})
        fmt::print(" {}: {:.3f}", dist, score(qs, dist, ks, 0));
    fmt::print("\n");
    fmt::print("  envelope of the score for q = k = ones, d_head {} (1 at distance 0):", dh);
    for (const double dist : {1.0, 10.0, 100.0, 1000.0})
        fmt::print("  {:.0f}: {:.3f}", dist, envelope(dh, 10000.0, dist));
    fmt::print("\n  v is never rotated: it carries content, not position. Rotating v too changes the outputs by ");
    const Tensor4 v = split_heads(linear(x, xt::view(mha.in_proj_weight, xt::range(2 * d, 3 * d), xt::all()),
                                         xt::view(mha.in_proj_bias, xt::range(2 * d, 3 * d))),
                                  H);  // (B, H, N, d_head)
    fmt::print("{:.2f}\n", max_abs_diff(scaled_dot_product_attention(q_rot, k_rot, apply_rope(v, rope), causal),
                                        scaled_dot_product_attention(q_rot, k_rot, v, causal)));
    return {q, k, v, q_rot, k_rot, q1};
}

void step5_layouts_and_base(const Tracer& trace, const Sizes& z, const Rotated& r) {
    trace.section("step 5: two layouts of the pairs, the base, and position interpolation");
    const std::size_t dh = z.dh;
    const auto& [q, k, q_rot, k_rot, q1] = std::tie(r.q, r.k, r.q_rot, r.k_rot, r.q1);
    const Rope interleaved{10000.0, RopeLayout::interleaved};
    const std::vector<std::size_t> perm = half_to_interleaved(dh);
    fmt::print("  interleaved pairs (2i, 2i+1): RoFormer, GPT-J; half pairs (i, i + d_head/2): GPT-NeoX, HF Llama\n");
    const Tensor4 q_int = apply_rope(permute_dims(q, perm), interleaved);  // (B, H, N, d_head)
    trace("q permuted, interleaved", q_int, "B, H, N, d_head");
    fmt::print("  interleaved(permuted q) vs permuted(half(q)): max |diff| = {:.1e} -- one rotation, two layouts\n",
               max_abs_diff(q_int, permute_dims(q_rot, perm)));
    const float scale = 1.0f / std::sqrt(float(dh));
    const Tensor4 scores_right = attention_scores(q_rot, k_rot, scale);  // (B, H, N, N)
    const Tensor4 scores_wrong = attention_scores(apply_rope(q, interleaved), apply_rope(k, interleaved), scale);
    trace("scores", scores_right, "B, H, N, N");
    const double mean_score = double(xt::mean(xt::abs(scores_right))());
    const double mean_change = double(xt::mean(xt::abs(scores_wrong - scores_right))());
    fmt::print(
        "  weights trained with the half layout, run with the interleaved one: max |score change| = {:.2f},\n"
        "  mean {:.3f} against a mean |score| of {:.3f} ({:.0f}%); only position 0 (no rotation) is untouched\n",
        max_abs_diff(scores_wrong, scores_right), mean_change, mean_score, 100.0 * mean_change / mean_score);
    fmt::print("  the longest wavelength, d_head = 128: base 10,000 -> {} positions; Llama 3's 500,000 -> {}\n",
               positions_text(wavelength(rope_frequencies(128, 10000.0).back())),
               positions_text(wavelength(rope_frequencies(128, 500000.0).back())));
    const std::size_t l_train = 4096, l_long = 16384;
    const Rope interpolated{10000.0, RopeLayout::half, double(l_train) / double(l_long)};
    const std::vector<double> far = {double(l_long - 1)};
    const Tensor4 far_q = apply_rope(q1, interpolated, far);  // (1, 1, 1, d_head)
    const Tensor4 near_q = apply_rope(q1, rope, std::vector<double>{double(l_long - 1) / 4.0});
    fmt::print(
        "  position interpolation, trained on {} tokens, run on {}: positions x {} -> position {} is rotated\n"
        "  like position {:.2f} (max |diff| = {:.1e}), within the angles the model has seen\n",
        l_train, l_long, interpolated.position_scale, l_long - 1, double(l_long - 1) / 4.0,
        max_abs_diff(far_q, near_q));
}

void step6_alibi(const Tracer& trace, const Sizes& z, const Rotated& r, const AttentionOptions& causal) {
    trace.section("step 6: ALiBi -- no embedding, a penalty -slope_h (i - j) on the causal scores");
    const auto [B, N, d, H, dh] = z;
    const auto& [q, k, v] = std::tie(r.q, r.k, r.v);
    const std::vector<double> slopes = alibi_slopes(H);
    fmt::print("  slopes for H = {}:", H);
    for (const double s : slopes) fmt::print(" {:.4g}", s);
    fmt::print("  (2^(-8h/H))\n");
    for (const std::size_t heads : {8u, 12u}) {
        fmt::print("  slopes for H = {}:", heads);
        for (const double s : alibi_slopes(heads)) fmt::print(" 2^{:.1f}", std::log2(s));
        fmt::print("\n");
    }
    fmt::print("  (H = 12 is no power of two: the 8 slopes of H = 8, then every other one of H = 16)\n");
    const Tensor3 bias = alibi_bias(H, N, N);  // (H, N, N)
    trace("bias", bias, "H, N, N");
    fmt::print("  head 0, query {}: bias over keys 0..{} =", N - 1, N - 1);
    for (std::size_t j = 0; j < N; ++j) fmt::print(" {:.2f}", double(bias(0, N - 1, j)) + 0.0);  // no "-0.00"
    fmt::print("\n");
    Tensor4 alibi_weights;
    const Tensor4 alibi_out = attention_with_bias(q, k, v, &bias, causal, &alibi_weights);  // (B, H, N, d_head)
    trace("weights", alibi_weights, "B, H, N, N");
    trace("heads out", alibi_out, "B, H, N, d_head");
    fmt::print("  the last query's weight on key 0, head 0 (steepest) vs head {} (gentlest): {:.3f} vs {:.3f}\n", H - 1,
               alibi_weights(0, 0, N - 1, 0), alibi_weights(0, H - 1, N - 1, 0));
}

void step7_rope_kv_cache(const Tracer& trace, Random& rng, const Sizes& z, std::size_t kv_heads, std::size_t generate,
                         const AttentionOptions& causal) {
    trace.section(fmt::format("step 7: RoPE with a KV cache -- {} decode steps after a prompt of {}", generate, z.N));
    const auto [B, N, d, H, dh] = z;
    GroupedQueryAttention gqa = GroupedQueryAttention::random(d, H, kv_heads, /*bias=*/true, rng);
    gqa.in_proj_weight *= std::sqrt(3.0f);
    const std::size_t total = N + generate;
    const Tensor3 xs = rng.normal<3>({B, total, d});  // (B, N + generated, d_model)
    KVCache cache(B, kv_heads, dh, total);
    Tensor3 decoded = Tensor3::from_shape({B, total, d});  // (B, N + generated, d_model)
    xt::view(decoded, xt::all(), xt::range(0, N), xt::all()) = prefill(gqa, cache, tokens(xs, 0, N), rope);
    trace("cache K (rotated)", cache.keys(), "B, H_kv, N, d_head");
    for (std::size_t t = N; t < total; ++t)
        xt::view(decoded, xt::all(), xt::range(t, t + 1), xt::all()) =
            decode_step(gqa, cache, tokens(xs, t, t + 1), rope);
    trace("cache K after decode", cache.keys(), "B, H_kv, N, d_head");
    const Tensor3 full = forward_with_positions(gqa, xs, xs, xs, PositionEncoding{rope}, causal);
    const double decode_diff = max_abs_diff(decoded, full);
    fmt::print(
        "  each key rotated once, at its position, as it enters; each query at its own position:\n"
        "  decode vs the full causal recompute with RoPE: max |diff| = {:.2e} ({} 1e-6)\n",
        decode_diff, decode_diff <= 1e-6 ? "<=" : ">");
    // The last token by hand, against caches built wrongly.
    const Tensor3 last = tokens(xs, total - 1, total);                        // (B, 1, d_model)
    const Tensor4 q_last = apply_rope(gqa.project_q(last), rope, total - 1);  // (B, H, 1, d_head)
    trace("q_new at its position", q_last, "B, H, 1, d_head");
    const Tensor4 v_all = gqa.project_v(xs);  // (B, H_kv, N, d_head)
    const auto output = [&](const Tensor4& q_new, const Tensor4& keys) {
        return linear(merge_heads(grouped_query_attention(q_new, keys, v_all)), gqa.out_proj_weight,
                      gqa.out_proj_bias);  // (B, 1, d_model)
    };
    const Tensor3 full_last = tokens(full, total - 1, total);
    const Tensor4 k_right = apply_rope(gqa.project_k(xs), rope);  // (B, H_kv, N, d_head)
    fmt::print("  the last token with keys rotated right: max |diff| = {:.1e}\n",
               max_abs_diff(output(q_last, k_right), full_last));
    fmt::print("  keys cached unrotated (position 0 for all):    max |diff| = {:.2f}\n",
               max_abs_diff(output(q_last, gqa.project_k(xs)), full_last));
    fmt::print("  keys rotated twice (once more on the way out of the cache): max |diff| = {:.2f}\n",
               max_abs_diff(output(q_last, apply_rope(k_right, rope)), full_last));
    fmt::print("  the query at the cache's start (0), not its own position: max |diff| = {:.2f}\n",
               max_abs_diff(output(apply_rope(gqa.project_q(last), rope, 0), k_right), full_last));
}

// The sinusoid table and the RoPE score envelope against distance, when --save-figures asks.
void figures_positions(const Tracer& trace, std::size_t d, const std::string& figures_dir) {
    if (figures_dir.empty()) return;
    trace.section("figures: the sinusoid table, and the RoPE score envelope against distance");
    const std::size_t rows_shown = 64, cols_shown = std::min<std::size_t>(d, 64);
    const Tensor2 table = sinusoidal_table(rows_shown, cols_shown);
    figure::Grid grid{cols_shown, rows_shown, {}};  // dims down, positions across
    for (std::size_t c = 0; c < cols_shown; ++c)
        for (std::size_t p = 0; p < rows_shown; ++p) grid.values.push_back(0.5f * (table(p, c) + 1.0f));
    std::vector<std::string> dim_labels, pos_labels;
    for (std::size_t c = 0; c < cols_shown; ++c) dim_labels.push_back(c % 8 == 0 ? std::to_string(c) : "");
    for (std::size_t p = 0; p < rows_shown; ++p) pos_labels.push_back(p % 8 == 0 ? std::to_string(p) : "");
    const figure::HeatmapPanel panel{"dimension (rows) x position (columns)", grid, dim_labels, pos_labels};
    figure::save(figure::heatmaps(fmt::format("sinusoidal encodings, d_model {}", cols_shown), std::span(&panel, 1),
                                  "white = -1, dark blue = +1", 8),
                 figures_dir, "09_sinusoids.png");

    figure::LinePlot plot{"RoPE: how far a score can reach, by distance", "distance m - n (tokens)",
                          "max |score| / score at 0, q = k = ones"};
    plot.log_y = false;
    const std::pair<std::size_t, double> configs[] = {{64, 10000.0}, {128, 10000.0}, {128, 500000.0}};
    for (std::size_t i = 0; i < 3; ++i) {
        figure::Series s{
            fmt::format("d_head {}, base {:g}", configs[i].first, configs[i].second), {}, {}, figure::palette(i)};
        // The upper envelope: the largest |score| over the distances [dist, 1.25 dist).
        for (double dist = 1.0; dist <= 100000.0; dist *= 1.25) {
            double top = 0.0;
            for (double e = dist; e < 1.25 * dist; e += std::max(1.0, dist / 64.0))
                top = std::max(top, std::abs(envelope(configs[i].first, configs[i].second, e)));
            s.x.push_back(dist);
            s.y.push_back(top);
        }
        plot.series.push_back(std::move(s));
    }
    plot.format_x = [](double n) { return n >= 1000.0 ? fmt::format("{:g}k", n / 1000.0) : fmt::format("{:g}", n); };
    figure::save(figure::line_plot(plot), figures_dir, "09_rope_envelope.png");
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 09: where is each token? Permutation, sinusoids, learned positions, RoPE and ALiBi",
                    "09_positions"};
    cli::LessonOptions opt;
    opt.dims.seq = 8;
    opt.dims.heads = 4;
    std::size_t kv_heads = 2, generate = 6, max_positions = 16;
    std::string figures_dir;
    cli::add_lesson_options(app, opt, "batch,seq,d-model,heads,seed");
    lesson::add_bounded_option(app, "--kv-heads", kv_heads, "key/value heads H_kv for step 7 (must divide --heads)", 1,
                               256);
    lesson::add_bounded_option(app, "--generate", generate,
                               "tokens decoded one at a time with RoPE after the prompt (step 7)", 1, 1024);
    lesson::add_bounded_option(app, "--max-positions", max_positions, "rows of step 3's learned position table", 1,
                               4096);
    lesson::add_save_figures(app, figures_dir, "this lesson's pictures (PNG)");
    return lesson::run(app, argc, argv, [&] {
        const std::size_t B = opt.dims.batch, N = opt.dims.seq, d = opt.dims.d_model, H = opt.dims.heads;
        cli::require_divisible(d, H);
        const std::size_t dh = d / H;
        if (dh % 2 != 0) {
            throw usage_error(
                fmt::format("RoPE rotates pairs of dimensions: d_head = {} / {} = {} must be even", d, H, dh));
        }
        if (d % 2 != 0) throw usage_error(fmt::format("sinusoids come in sin/cos pairs: --d-model {} must be even", d));
        if (H % kv_heads != 0) {
            throw usage_error(fmt::format("--kv-heads {} does not divide --heads {}", kv_heads, H));
        }
        const Sizes z{B, N, d, H, dh};
        const Tracer trace(!opt.quiet);
        Random rng(opt.seed);
        fmt::print("Lesson 09: where is each token?   B={} N={} d_model={} H={} d_head={} H_kv={} seed={}\n", B, N, d,
                   H, dh, kv_heads, opt.seed);
        const Layer layer = the_layer(rng, z);
        AttentionOptions causal;
        causal.causal = true;
        step1_blind_to_order(trace, z, layer, causal);
        step2_sinusoids(trace, z, layer);
        step3_learned_table(trace, rng, z, max_positions);
        const Rotated r = step4_rope(trace, z, layer, causal);
        step5_layouts_and_base(trace, z, r);
        step6_alibi(trace, z, r, causal);
        step7_rope_kv_cache(trace, rng, z, kv_heads, generate, causal);
        figures_positions(trace, d, figures_dir);
        return cli::exit_ok;
    });
}
