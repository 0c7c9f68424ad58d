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
    // BEGIN SOLUTION
    for (std::size_t b = 0; b < n / 32; ++b) {
        const BlockQ4_1& block = blocks[b];
        const float d = fp16_to_float(block.d), m = fp16_to_float(block.m);
        float* w = out + b * 32;
        for (std::size_t j = 0; j < 16; ++j) {
            const int lo = block.qs[j] & 0x0F;  // weight j
            const int hi = block.qs[j] >> 4;    // weight j + 16
            w[j] = d * static_cast<float>(lo) + m;
            w[j + 16] = d * static_cast<float>(hi) + m;
        }
    }
    return;
    // STUB
    // TODO(ex12): for each of the n / 32 blocks: d and m as floats (fp16_to_float), then for
    // j = 0 .. 15 weight j = d * (low nibble of qs[j]) + m and weight j + 16 = d * (high nibble) + m
    // (lesson 12, step 2 does one block by hand).
    not_implemented_yet();
    // END SOLUTION
}

void rope_adjacent_pairs(float* x, std::size_t heads, std::size_t d_head, std::size_t position, double base) {
    // BEGIN SOLUTION
    for (std::size_t i = 0; i < d_head / 2; ++i) {
        const double theta = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d_head));
        const double angle = static_cast<double>(position) * theta;
        const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
        for (std::size_t h = 0; h < heads; ++h) {
            float* pair = x + h * d_head + 2 * i;  // dimensions 2i and 2i + 1 of head h
            const float a = pair[0], b = pair[1];
            pair[0] = a * c - b * s;
            pair[1] = b * c + a * s;
        }
    }
    return;
    // STUB
    // TODO(ex12): for each head and each pair (2i, 2i + 1): the angle position * base^(-2i / d_head)
    // (in double), then rotate the pair by it, both new values from the two old ones (lesson 09, step 4;
    // lesson 12, step 4 rotates with the adjacent pairs).
    not_implemented_yet();
    // END SOLUTION
}

void decode_attention(const float* q, const float* k_cache, const float* v_cache, std::size_t heads,
                      std::size_t kv_heads, std::size_t length, std::size_t d_head, float* out) {
    // BEGIN SOLUTION
    const std::size_t group = heads / kv_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
    std::vector<float> w(length);
    for (std::size_t h = 0; h < heads; ++h) {
        const std::size_t kv = h / group;  // query heads kv*g .. kv*g + g - 1 share K/V head kv
        const float* qh = q + h * d_head;
        const float* k = k_cache + kv * length * d_head;
        const float* v = v_cache + kv * length * d_head;
        float m = -INFINITY;
        for (std::size_t j = 0; j < length; ++j) {
            float dot = 0.0f;
            for (std::size_t c = 0; c < d_head; ++c) dot += qh[c] * k[j * d_head + c];
            w[j] = dot * scale;
            m = std::max(m, w[j]);
        }
        float sum = 0.0f;
        for (std::size_t j = 0; j < length; ++j) {
            w[j] = std::exp(w[j] - m);
            sum += w[j];
        }
        for (std::size_t c = 0; c < d_head; ++c) {
            float acc = 0.0f;
            for (std::size_t j = 0; j < length; ++j) acc += w[j] * v[j * d_head + c];
            out[h * d_head + c] = acc / sum;
        }
    }
    return;
    // STUB
    // TODO(ex12): for each query head h: K/V head h / (H / H_kv); the scores q_h . k_j / sqrt(d_head)
    // over the T = length cached keys, nothing masked; softmax (subtract the row's max before exp);
    // out_h = the weighted sum of that head's cached values (lesson 08, step 6; lesson 12, step 5).
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex12
