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
//
// AVX-512 takes four Q4_1 blocks (80 bytes) a step, and moves the activation rather than the
// weights: x is laid out once per row in the order the nibbles lie (per group of four blocks, every
// block's codes 0-15 in one 64-byte run, its codes 16-31 in the next), so that a group's weights
// need one permute (their four runs of 16 bytes of nibbles, 20 bytes apart, into one register), one
// shift and two masks, and two dpbusd give 16 sums, four a block. One more permute of the same
// 80 bytes spreads the four fp16 scales over their blocks' lanes and gathers the four minimums.
// Q8_0 takes two blocks a step (|w| unsigned, w's sign moved onto x).
#pragma once

#include "headwise/fast/isa.hpp"
#include "headwise/model/gguf.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>
#include <string_view>

namespace headwise::quant {

// An activation row quantized per block of 32: x_j ~ d_b * q_j for j in block b. The codes lie in
// one 64-byte aligned run (two blocks are one 512-bit load); each block's d_b and s_b = d_b * sum of
// its codes lie side by side in ds() (two blocks' four floats are one 128-bit load). The same row
// is also laid out per group of four blocks for the AVX-512 Q4_1 product (see group()).
class QuantizedRow {
public:
    // d_b = max |x_j| / 127 over the block, q_j = round(x_j / d_b). n a multiple of 32.
    void quantize(const float* x, std::size_t n);

    // Group g (blocks 4g .. 4g + 3; past the last block, zeros): 256 bytes, 64-byte aligned --
    //   int8 [64]  codes 0-15 of each of the four blocks, one after the other
    //   int8 [64]  codes 16-31 of each
    //   float[16]  d of each block, four times (the lanes of that block's sums)
    //   float[4]   s of each block
    static constexpr std::size_t group_bytes = 256;
    std::size_t groups() const { return (blocks() + 3) / 4; }
    const std::byte* group(std::size_t g) const { return groups_.get() + g * group_bytes; }

    std::size_t size() const { return n_; }
    std::size_t blocks() const { return n_ / 32; }
    const std::int8_t* q() const { return q_.get(); }
    const float* ds() const { return ds_.data(); }  // d_0, s_0, d_1, s_1, ...
    float d(std::size_t b) const { return ds_[2 * b]; }
    float s(std::size_t b) const { return ds_[2 * b + 1]; }

private:
    struct Free {
        void operator()(void* p) const { ::operator delete[](p, std::align_val_t{64}); }
    };
    void place_in_group(std::size_t b);  // block b's codes, d and s into its group
    std::unique_ptr<std::int8_t[], Free> q_;
    std::unique_ptr<std::byte[], Free> groups_;
    std::size_t n_ = 0, capacity_ = 0;
    std::vector<float> ds_;
};

// scalar, avx2, avx512 (fast/isa.hpp, shared with the attention's kernels).
using headwise::Isa;
using headwise::to_string;

// What this process uses: the best the CPU has (avx512 here also needs BW, DQ, VL and VNNI), or
// HEADWISE_ISA (usage_error when that names an instruction set the CPU lacks, or nothing known).
Isa active_isa();
// For tests and benchmarks: the next products use `isa` (usage_error if the CPU lacks it).
void set_isa(Isa isa);
bool cpu_has(Isa isa);

// The dot product of weight row `w` (x.blocks() blocks of `type`: Q4_1 or Q8_0) with x.
float dot(gguf::Type type, const std::byte* w, const QuantizedRow& x);

// quant::dequantize_rows (the same values), with AVX-512 for a matrix in panels where it runs (whole
// panels: first and last multiples of 16), for the float path's BLAS products.
void dequantize_rows_fast(const gguf::TensorInfo& weights, std::size_t first, std::size_t last, float* out);

// y[r - first] for rows [first, last) of `weights` (rows x columns, Q4_1 or Q8_0) against one
// quantized activation row of `columns` values. A Q4_1 matrix in panels (quant.hpp; lesson
// 12's decoder regroups its matrices where active_isa() is avx512) is multiplied 16 rows at a time: first and last
// multiples of 16 (std::invalid_argument otherwise).
void matvec_rows(const gguf::TensorInfo& weights, const QuantizedRow& x, std::size_t first, std::size_t last, float* y);

}  // namespace headwise::quant
