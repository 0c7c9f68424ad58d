// headwise/model/quant_dot.hpp -- dot products straight on the quantized blocks (lesson 12's fast path).
//
// A decode step reads every weight once, so its speed is the memory's: 4.5 bits a weight (Q4_1)
// instead of 32 moves 7x fewer bytes. The weights stay in their blocks; the activation row is
// quantized too, per block of 32 (as llama.cpp does for its integer dot products), so that one
// block's 32 products are integer multiply-adds:
//
//   x_j ~ dx * qx_j (qx_j in -127..127),   w_j = dw * qw_j + mw (Q4_1, qw_j in 0..15)
//   sum_j w_j x_j ~ dw dx * sum_j qw_j qx_j  +  mw * (dx * sum_j qx_j)
//                   ^ integers, 32 at a time   ^ `s`, kept with the block
//
// For the Q8_0 output matrix (w_j = dw * qw_j) only the first term exists. Three spellings of each
// product, picked once per process by the CPU (or HEADWISE_ISA=scalar|avx2|avx512): plain C++,
// AVX2 (32 byte lanes, maddubs), AVX-512 with VNNI (64 lanes: two blocks, dpbusd). All three give
// the same integer sums; only the order of the float additions differs.
#pragma once

#include "headwise/model/gguf.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace headwise::quant {

// One block of 32 activations: x_j ~ d * qs[j]; s = d * sum(qs).
struct BlockQ8 {
    float d;
    float s;
    std::int8_t qs[32];
};
static_assert(sizeof(BlockQ8) == 40);

// x[0, n) -> n / 32 blocks (n a multiple of 32): d = max|x| / 127, q = round(x / d).
void quantize_activations(const float* x, BlockQ8* out, std::size_t n);

enum class Isa { scalar, avx2, avx512 };
std::string_view to_string(Isa isa);

// What this process uses: the best the CPU has, or HEADWISE_ISA (usage_error when that names an
// instruction set the CPU lacks, or nothing known).
Isa active_isa();
// For tests and benchmarks: the next products use `isa` (usage_error if the CPU lacks it).
void set_isa(Isa isa);
bool cpu_has(Isa isa);

// The dot product of weight row `w` (`blocks` blocks of `type`: Q4_1 or Q8_0) with x.
float dot(gguf::Type type, const std::byte* w, const BlockQ8* x, std::size_t blocks);

// y[r - first] for rows [first, last) of `weights` (rows x columns, Q4_1 or Q8_0) against one
// quantized activation row x (columns / 32 blocks).
void matvec_rows(const gguf::TensorInfo& weights, const BlockQ8* x, std::size_t first, std::size_t last, float* y);

}  // namespace headwise::quant
