// kernels/tolerance.hpp -- how close a kernel must come to the double-precision reference: fp32's
// tolerance, and the tensor-core kernels' bounds derived in tensor_core.cuh.
//
// Shared by the lesson (its verdict) and the tests (their pass/fail): a bound is a statement about
// float arithmetic, not an expected value, so one copy serves both.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace headwise::kernels {

// fp32's tolerance: |out - ref| <= 1e-5 + 1e-4 |ref|, what fp32 accumulation over a few hundred keys
// may add. A kernel bug (a forgotten rescale, a wrong bound) misses by 1e-2 or more.
inline double fp32_allowed(double ref) { return 1e-5 + 1e-4 * std::abs(ref); }

// The largest amount by which |out - ref| exceeds fp32_allowed(ref), over n elements. 0 = all
// within tolerance; a NaN counts as 1e30.
inline double excess_error(const float* out, const float* ref, std::size_t n) {
    double worst = 0.0;
    for (std::size_t e = 0; e < n; ++e) {
        const double diff = std::abs(double(out[e]) - double(ref[e]));
        const double allowed = fp32_allowed(double(ref[e]));
        if (!(diff <= allowed)) worst = std::max(worst, std::isnan(diff) ? 1e30 : diff - allowed);
    }
    return worst;
}

// The tensor-core kernel reads q, k, v rounded to 16 bits (u = 2^-11 for fp16, 2^-8 for bf16) and
// rounds the softmax weights P to 16 bits before P V. The bounds derived in
// src/kernels/tensor_core.cuh, checked per query row (b, h, i) with its `end` visible keys:
//   vs a reference from the same rounded q, k, v:  |out - ref| <= u max_j<end |v_j| + fp32's tolerance
//   vs the fp32 reference:  |out - ref| <= max_j<end |v_j| (3u + exp(2 e) - 1) + fp32's tolerance,
//       e = max_j<end 2u scale sum_c |q_ic| |k_jc|  (how far rounding q and k can move a score)
// Returns the largest excess over the bound (0 = within; NaN counts as 1e30).
struct RowLayout {
    int batch, heads, seq, d_head;
    bool causal;
    float scale;
    const int* key_len;  // (B)
};
inline double excess_error_16_bit(const float* out, const float* ref, const float* q, const float* k, const float* v,
                                  const RowLayout& s, double u, bool ref_from_rounded_inputs) {
    double worst = 0.0;
    const std::size_t D = std::size_t(s.d_head), N = std::size_t(s.seq);
    std::vector<double> v_row_max(N);  // max_c |v_jc| of each key j of one (b, h)
    for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < s.heads; ++h) {
            const std::size_t head = (std::size_t(b) * std::size_t(s.heads) + std::size_t(h)) * N;  // row 0 of (b, h)
            for (std::size_t j = 0; j < N; ++j) {
                v_row_max[j] = 0.0;
                for (std::size_t c = 0; c < D; ++c)
                    v_row_max[j] = std::max(v_row_max[j], std::abs(double(v[(head + j) * D + c])));
            }
            for (std::size_t i = 0; i < N; ++i) {
                const std::size_t n_keys = std::size_t(s.key_len[b]);
                const std::size_t end = s.causal ? std::min(i + 1, n_keys) : n_keys;
                double v_max = 0.0, e = 0.0;
                for (std::size_t j = 0; j < end; ++j) {
                    double qk = 0.0;
                    for (std::size_t c = 0; c < D; ++c)
                        qk += std::abs(double(q[(head + i) * D + c])) * std::abs(double(k[(head + j) * D + c]));
                    v_max = std::max(v_max, v_row_max[j]);
                    e = std::max(e, 2.0 * u * double(s.scale) * qk);
                }
                const double slack = ref_from_rounded_inputs ? u * v_max : v_max * (3.0 * u + std::expm1(2.0 * e));
                for (std::size_t c = 0; c < D; ++c) {
                    const std::size_t at = (head + i) * D + c;
                    const double diff = std::abs(double(out[at]) - double(ref[at]));
                    const double allowed = slack + fp32_allowed(double(ref[at]));
                    if (!(diff <= allowed)) worst = std::max(worst, std::isnan(diff) ? 1e30 : diff - allowed);
                }
            }
        }
    return worst;
}

}  // namespace headwise::kernels
