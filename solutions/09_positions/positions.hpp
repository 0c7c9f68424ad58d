// Exercise 09 -- positions: RoPE on q and k at given positions, in both layouts, with a KV cache,
// and the ALiBi bias (lesson 09).
//
// You write apply_rope, rope_append and alibi_bias, declared here, in positions.cpp. This header
// is shared with the grader: do not change the signatures.
//
// Dimension letters: B = batch, H = query heads, H_kv = key/value heads, N = tokens,
// d_head = per-head width (even), P = tokens already cached.
#pragma once

#include "exercise.hpp"

#include <cstddef>

namespace headwise::rotary {

// How RoPE pairs the d_head dimensions of a head: pair i is rotated by the angle p * theta_i.
//   half         pairs (i, i + d_head / 2)  Hugging Face's Llama (rotate_half), GPT-NeoX
//   interleaved  pairs (2i, 2i + 1)         the RoFormer paper, GPT-J
enum class Layout { half, interleaved };

// The KV cache of lesson 08, its keys stored rotated.
struct RopeCache {
    Tensor4 k;               // (B, H_kv, capacity, d_head): the keys, each rotated at its own position
    Tensor4 v;               // (B, H_kv, capacity, d_head): the values, as projected
    std::size_t length = 0;  // tokens cached so far (positions 0 .. length - 1)
};

}  // namespace headwise::rotary

namespace headwise::ex09 {

using rotary::Layout;
using rotary::RopeCache;

// x (B, H, N, d_head) with token n rotated at position first_position + n:
//   theta_i = base^(-2i / d_head), i = 0 .. d_head/2 - 1, and for each pair (a, b) of `layout`
//   y_a = x_a cos(p theta_i) - x_b sin(p theta_i),   y_b = x_b cos(p theta_i) + x_a sin(p theta_i).
// Returns a new tensor of the same shape.
Tensor4 apply_rope(const Tensor4& x, std::size_t first_position, double base, Layout layout);

// New tokens enter the cache: q (B, H, n, d_head), k and v (B, H_kv, n, d_head) are their
// projections, new token i sitting at position cache.length + i. Store k (rotated at its
// position) and v at those positions of the cache, count them in cache.length, and return q
// rotated at the same positions, ready to attend over the cache.
Tensor4 rope_append(RopeCache& cache, const Tensor4& q, const Tensor4& k, const Tensor4& v, double base, Layout layout);

// The ALiBi bias (H, N_q, N_k) for causal attention: query i sits at position first_query + i, and
//   bias(h, i, j) = -slope_h * (first_query + i - j) for keys j <= first_query + i, 0 for the others
//   (the causal mask hides them). slope_h = 2^(-8 (h + 1) / H) when H is a power of two; otherwise
//   the slopes of the largest power of two P below H, then slopes 0, 2, 4, ... of 2P until there are H.
Tensor3 alibi_bias(std::size_t heads, std::size_t n_q, std::size_t n_k, std::size_t first_query);

}  // namespace headwise::ex09
