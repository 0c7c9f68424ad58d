// tests/cuda/tolerance.hpp -- how close a kernel must come to the double-precision reference:
// fp32's tolerance and the tensor-core kernels' derived bounds, which live beside the kernels
// (kernels/tolerance.hpp; the lesson states them too).
#pragma once

#include "kernels/tolerance.hpp"

namespace headwise::test {

using kernels::excess_error;

// kernels::excess_error for a gradient (dq, dk or dv of the backward kernels): the largest amount by which
// |g - ref| exceeds 1e-4 (scale + |ref|), where scale is the larger of max |ref| and `common_scale`.
// An element of dq sums over up to N keys (dk, dv over up to N queries) terms the size of the whole
// tensor's, with cancellation (each row of dS sums to zero): fp32's error follows the tensor's scale,
// not the element's. And a gradient can be zero in exact arithmetic while fp32 leaves ~1e-7 of
// rounding in it: with one key, dS = P (dP - D) = 1 (dP - dP), so dq and dk are 0 and only dv =
// dO is not. Pass the largest max |ref| of dq, dk and dv as `common_scale` so that such a tensor is
// judged on the problem's scale, not on its own zero one (an H100 run of naive_backward at N = 1
// failed on exactly that). A kernel bug (a dropped key, a missing D or scale) misses by 1e-2 of
// that scale or more.
inline double gradient_excess_error(const float* g, const float* ref, std::size_t n, double common_scale) {
    double scale = common_scale;
    for (std::size_t e = 0; e < n; ++e) scale = std::max(scale, std::abs(double(ref[e])));
    double worst = 0.0;
    for (std::size_t e = 0; e < n; ++e) {
        const double diff = std::abs(double(g[e]) - double(ref[e]));
        const double allowed = 1e-4 * (scale + std::abs(double(ref[e])));
        if (!(diff <= allowed)) worst = std::max(worst, std::isnan(diff) ? 1e30 : diff - allowed);
    }
    return worst;
}

// The `common_scale` for gradient_excess_error: the largest |element| of the reference's dq, dk and dv.
template <class Grads>
double gradients_scale(const Grads& ref) {
    double scale = 0.0;
    for (const auto* t : {&ref.dq, &ref.dk, &ref.dv})
        for (float x : *t) scale = std::max(scale, std::abs(double(x)));
    return scale;
}

// The tensor-core kernel's derived bounds live beside the kernels (the lesson states them too).
using kernels::excess_error_16_bit;
using kernels::RowLayout;

}  // namespace headwise::test
