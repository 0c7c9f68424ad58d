// Exercise 12 -- the decode step of a real decoder: Q4_1 weights, RoPE at the new position, and the
// new token's grouped-query attention over the cache (lesson 12).
//
// You write dequantize_q4_1, rope_adjacent_pairs and decode_attention, declared here, in decode.cpp.
// This header is shared with the grader: do not change the signatures.
//
// Everything is a flat float array, row-major, as llama::Session keeps it (and llama.cpp):
//   a (H, d_head) array holds head h's d_head values at x[h * d_head + c];
//   a (H_kv, T, d_head) cache holds head g's key of token j at k[(g * T + j) * d_head + c].
// Dimension letters: H = query heads, H_kv = key/value heads (H_kv divides H), g = H / H_kv query
// heads per key/value head, T = tokens in the cache, d_head = per-head width (even).
// SmolLM2-135M: H = 9, H_kv = 3, d_head = 64, RoPE base 100,000.
#pragma once

#include "exercise.hpp"

#include "headwise/model/quant.hpp"

#include <cstddef>
#include <cstdint>

namespace headwise::ex12 {

// One Q4_1 block of GGML (and of the GGUF file): 32 weights in 20 bytes.
//   d   the scale, an IEEE half float: quant::fp16_to_float(block.d) gives it as a float
//   m   the block's minimum, a half float too
//   qs  16 bytes, two 4-bit q in 0..15 per byte: weight j (j < 16) is the LOW nibble of qs[j],
//       weight j + 16 the HIGH nibble of qs[j]
// and weight j = d * q_j + m.
using quant::BlockQ4_1;
using quant::fp16_to_float;

// Weights 0 .. n - 1 of the row whose blocks start at `blocks` (n a multiple of 32: n / 32 blocks)
// into out[0 .. n - 1].
void dequantize_q4_1(const BlockQ4_1* blocks, std::size_t n, float* out);

// x (H, d_head), the new token's queries (or keys) sitting at `position`, rotated in place: every
// head's pairs of ADJACENT dimensions (2i, 2i + 1), i = 0 .. d_head/2 - 1, turn by the angle
// position * theta_i, theta_i = base^(-2i / d_head):
//   x_2i   <- x_2i cos(angle) - x_2i+1 sin(angle)
//   x_2i+1 <- x_2i+1 cos(angle) + x_2i sin(angle)
// (lesson 09's "interleaved" layout: GGUF stores Llama's W_q and W_k rows permuted for it).
void rope_adjacent_pairs(float* x, std::size_t heads, std::size_t d_head, std::size_t position, double base);

// The new token's attention: q (H, d_head), its queries, already rotated; k_cache and v_cache
// (H_kv, T, d_head) with T = length, the keys (rotated) and values of every token so far, the new
// one's last.
// For each query head h, reading key/value head h / (H / H_kv):
//   w_j = softmax over j = 0 .. T - 1 of  q_h . k_j / sqrt(d_head)   (no mask: all are in the past)
//   out_h = sum_j w_j v_j
// out (H, d_head).
void decode_attention(const float* q, const float* k_cache, const float* v_cache, std::size_t heads,
                      std::size_t kv_heads, std::size_t length, std::size_t d_head, float* out);

}  // namespace headwise::ex12
