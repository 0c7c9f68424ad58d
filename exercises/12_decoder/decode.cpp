// Exercise 12 -- the decode step of a real decoder: Q4_1, RoPE at the new position, GQA over the cache.
//
// Read lesson 12 first (./headwise run 12, lessons/12_decoder.cpp, docs/12_decoder.md); RoPE is
// lesson 09's, the grouped-query read of the cache lesson 08's.
// Grade with:  ./headwise grade 12    (or: ctest --preset grade -L ex12)
// Stuck? ./headwise hint 12 shows one hint at a time (exercises/12_decoder/HINTS.md).
//
// The arrays are flat and row-major (decode.hpp): element c of head h of a (H, d_head) array is
// x[h * d_head + c]; token j of K/V head g of a (H_kv, T, d_head) cache starts at (g * T + j) * d_head.
#include "decode.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace headwise::ex12 {

void dequantize_q4_1(const BlockQ4_1* blocks, std::size_t n, float* out) {
    // TODO(ex12): for each of the n / 32 blocks: d and m as floats (fp16_to_float), then for
    // j = 0 .. 15 weight j = d * (low nibble of qs[j]) + m and weight j + 16 = d * (high nibble) + m
    // (lesson 12, step 2 does one block by hand).
    not_implemented_yet();
}

void rope_adjacent_pairs(float* x, std::size_t heads, std::size_t d_head, std::size_t position, double base) {
    // TODO(ex12): for each head and each pair (2i, 2i + 1): the angle position * base^(-2i / d_head)
    // (in double), then rotate the pair by it, both new values from the two old ones (lesson 09, step 4;
    // lesson 12, step 4 rotates with the adjacent pairs).
    not_implemented_yet();
}

void decode_attention(const float* q, const float* k_cache, const float* v_cache, std::size_t heads,
                      std::size_t kv_heads, std::size_t length, std::size_t d_head, float* out) {
    // TODO(ex12): for each query head h: K/V head h / (H / H_kv); the scores q_h . k_j / sqrt(d_head)
    // over the T = length cached keys, nothing masked; softmax (subtract the row's max before exp);
    // out_h = the weighted sum of that head's cached values (lesson 08, step 6; lesson 12, step 5).
    not_implemented_yet();
}

}  // namespace headwise::ex12
