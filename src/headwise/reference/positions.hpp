// headwise/reference/positions.hpp -- where each token is: the ways attention is told word order
// (lesson 09).
//
// Attention by itself cannot tell word order: permute the tokens and every output row moves with
// them, unchanged. Three answers are in use:
//
//   sinusoids (Vaswani et al., 2017)  a fixed (N, d_model) table added to x before the projections:
//                                     PE[p, 2i] = sin(p w_i), PE[p, 2i + 1] = cos(p w_i),
//                                     w_i = base^(-2i / d_model), base 10,000
//   RoPE (Su et al., RoFormer)        q and k of token p rotated, pair of dimensions i by the angle
//                                     p theta_i, theta_i = base^(-2i / d_head): q_m . k_n then depends
//                                     on m - n only. v is never rotated.
//   ALiBi (Press et al., 2022)        no embedding at all: -slope_h (i - j) added to head h's scores
//
// RoPE pairs its dimensions in one of two layouts, equal up to a permutation of the dimensions:
//   interleaved  (2i, 2i + 1)       the RoFormer paper, GPT-J, Meta's original Llama code
//   half         (i, i + d_head/2)  GPT-NeoX, Hugging Face's Llama (rotate_half)
// Weights trained with one layout give different scores in the other.
//
// Shapes, in PyTorch's order: q, k (B, H, N, d_head); bias (H, N_q, N_k).
#pragma once

#include "headwise/base/attention_options.hpp"
#include "headwise/base/tensor.hpp"
#include "headwise/fast/fused_attention.hpp"

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace headwise {

// ---------------------------------------------------------------------------------------------
// Sinusoidal encodings.

// (N, d_model): row p is position first_position + p. usage_error when d_model is odd or 0.
Tensor2 sinusoidal_table(std::size_t n, std::size_t d_model, double base = 10000.0, std::size_t first_position = 0);

// ---------------------------------------------------------------------------------------------
// Rotary position embeddings.

enum class RopeLayout { half, interleaved };

// "half" or "interleaved".
std::string_view layout_name(RopeLayout layout);

struct Rope {
    double base = 10000.0;  // Llama 1-2: 10,000; Llama 3: 500,000
    RopeLayout layout = RopeLayout::half;
    // Position interpolation: positions are multiplied by this (L_train / L to fit a context of L
    // tokens into the angles a model trained on L_train tokens has seen). 1 = none.
    double position_scale = 1.0;
};

// Throws usage_error naming the problem: d_head odd or 0, base not above 1, scale not above 0.
void validate(const Rope& rope, std::size_t d_head);

// theta_i = base^(-2i / d_head), i = 0 .. d_head/2 - 1: the angle per position of pair i.
std::vector<double> rope_frequencies(std::size_t d_head, double base);

// The two dimensions that frequency i rotates together: (2i, 2i + 1) or (i, i + d_head/2).
std::pair<std::size_t, std::size_t> rope_pair(std::size_t i, std::size_t d_head, RopeLayout layout);

// x (B, H, N, d_head) with token n rotated at position (first_position + n) * position_scale:
//   (x_a, x_b) -> (x_a cos(p theta_i) - x_b sin(p theta_i), x_b cos(p theta_i) + x_a sin(p theta_i))
// for every pair (a, b) = rope_pair(i). The angles are computed in double precision.
Tensor4 apply_rope(const Tensor4& x, const Rope& rope, std::size_t first_position = 0);

// The same with one position per token (N of them), scaled by rope.position_scale.
Tensor4 apply_rope(const Tensor4& x, const Rope& rope, std::span<const double> positions);

// The same rotation in place on (B, H, N, d_head) anywhere in memory (x.row apart, d_head
// contiguous), one position per token. `inverse` rotates by -p theta_i instead: the rotation's
// transpose, which is how a gradient goes back through RoPE (dq = R(-theta) dq_rotated).
struct RopeShape {
    std::size_t batch, heads, n, d_head;
};
void rotate_in_place(fast::Strided<float> x, const RopeShape& shape, const Rope& rope,
                     std::span<const double> positions, bool inverse = false);

// The same in two halves, for many rotations at the same positions (a decoder's q and k in every
// layer): the cos and sin of every (token, pair) angle, computed once, (N, d_head / 2) each ...
struct RopeAngles {
    std::size_t pairs = 0;
    std::vector<double> cos, sin;  // sin already negated when inverse
};
RopeAngles rope_angles(const Rope& rope, std::size_t d_head, std::span<const double> positions, bool inverse = false);
// ... then the rotation by them, pairs as `layout` groups them.
void rotate_in_place(fast::Strided<float> x, const RopeShape& shape, RopeLayout layout, const RopeAngles& angles);

// The permutation of d_head dimensions that turns the half layout into the interleaved one:
// interleaved[c] = half[perm[c]], i.e. perm = (0, d/2, 1, d/2 + 1, ...).
std::vector<std::size_t> half_to_interleaved(std::size_t d_head);

// y[..., c] = x[..., perm[c]] over the last axis of x (B, H, N, d_head).
Tensor4 permute_dims(const Tensor4& x, std::span<const std::size_t> perm);

// ---------------------------------------------------------------------------------------------
// ALiBi.

// One slope per head. H a power of two: 2^(-8 h / H), h = 1 .. H. Otherwise (the rule of the
// ALiBi paper's code): the slopes of the largest power of two P below H, then every other slope
// of 2P (the 1st, 3rd, ...) until there are H.
std::vector<double> alibi_slopes(std::size_t heads);

// (H, N_q, N_k): bias(h, i, j) = -slope_h |i' - j|, i' = first_query + i the query's position.
// For a causal layer only j <= i' is ever used, and the bias is -slope_h (i' - j).
Tensor3 alibi_bias(std::size_t heads, std::size_t n_q, std::size_t n_k, std::size_t first_query = 0);

// ---------------------------------------------------------------------------------------------
// Attention with an additive bias, in double precision with plain loops.

// softmax(q k^T * scale + bias[h] + masks) v; q (B, H, N_q, d_head), k and v (B, H_kv, N_k, d_head)
// with H_kv dividing H (query head h reads K/V head h / (H / H_kv)), bias (H, N_q, N_k) or null.
// `weights`, if given, receives (B, H, N_q, N_k). A query with every key masked gets zeros.
Tensor4 attention_with_bias(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Tensor3* bias,
                            const AttentionOptions& options = {}, Tensor4* weights = nullptr);

// How a layer is told positions: RoPE on q and k, ALiBi on the scores, both or neither. Token n of
// the query and of the keys sits at position first_position + n.
struct PositionEncoding {
    std::optional<Rope> rope;
    bool alibi = false;
    std::size_t first_position = 0;
};

}  // namespace headwise
