// headwise/fast/vexp.hpp -- a vectorised exp for softmax rows.
//
// std::exp is called one float at a time; softmax over (B, H, N, N) calls it millions of times
// and spent about half the forward pass there. This is the classic Cephes range reduction and
// polynomial (relative error ~1e-7, i.e. float precision), written as a plain loop that the
// compiler vectorises for x86-64-v3 (AVX2 with FMA) and baseline x86-64; with AVX2 or AVX-512,
// intrinsics and a polynomial of our own fit do it in about half the instructions (vexp.cpp).
// Picked at run time: the free functions follow fast_isa() (the CPU, or HEADWISE_ISA); row_ops
// gives one instruction set's spelling, for the register tiles of that set and for tests.
#pragma once

#include "headwise/fast/isa.hpp"

#include <cstddef>

namespace headwise::fast {

// x[i] = exp(x[i] - shift) for i < n; returns the sum of the results.
// Inputs below about -87 (including -inf, a masked position) give exactly 0.
float exp_shifted_sum(float* x, std::size_t n, float shift);

// Each row r of x (rows, n) becomes exp(x[r][i] - shifts[r]), without sums; a shift of -inf (a
// row that saw no key: its log-sum-exp) makes the row 0.
void exp_shifted_rows(float* x, std::size_t rows, std::size_t n, const float* shifts);

// The softmax backward of one row of n keys: p[i] = exp(p[i] - shift) (the weights P, from the scores
// and the row's log-sum-exp) and dp[i] = p[i] (dp[i] - d) scale (dS, from dP and D), one pass over
// both; a shift of -inf makes both rows 0.
void softmax_backward_row(float* p, float* dp, std::size_t n, float shift, float d, float scale);

// The largest of x[0..n), n > 0 (NaNs are passed over, as std::max_element does, and -inf when
// every entry is -inf). Many lanes at a time; std::max_element goes one float at a time.
float row_max(const float* x, std::size_t n);

// The four functions above as one instruction set spells them (the CPU must have it): scalar is the
// compiler's vectorisation of the plain loops, avx2 and avx512 are intrinsics. All give the same
// results to float rounding (the exponentials within 3e-7 of the true value).
struct RowOps {
    float (*exp_shifted_sum)(float* x, std::size_t n, float shift);
    void (*exp_shifted_rows)(float* x, std::size_t rows, std::size_t n, const float* shifts);
    void (*softmax_backward_row)(float* p, float* dp, std::size_t n, float shift, float d, float scale);
    float (*row_max)(const float* x, std::size_t n);
};
const RowOps& row_ops(Isa isa);

}  // namespace headwise::fast
