// tests/grade/12_decoder.hpp -- exercise 12 as the grader sees it: a table of its functions.
#pragma once

#include "decode.hpp"
#include "registry.hpp"

namespace headwise::grade {

struct Ex12 {
    void (*dequantize_q4_1)(const quant::BlockQ4_1* blocks, std::size_t n, float* out);
    void (*rope_adjacent_pairs)(float* x, std::size_t heads, std::size_t d_head, std::size_t position, double base);
    void (*decode_attention)(const float* q, const float* k_cache, const float* v_cache, std::size_t heads,
                             std::size_t kv_heads, std::size_t length, std::size_t d_head, float* out);
};

}  // namespace headwise::grade

namespace {
// The functions of namespace headwise::ex12 (in the catalogue's build, a mistake's).
[[maybe_unused]] headwise::grade::Ex12 bind_ex12() {
    return {&headwise::ex12::dequantize_q4_1, &headwise::ex12::rope_adjacent_pairs, &headwise::ex12::decode_attention};
}
}  // namespace
