// softmax took exp() of the raw scores: exp(100) is 2.7e43 and exp(89) already overflows a float to inf, so large scores give NaN.
// Subtract each row's maximum before exp(): the result is the same, and exp() never sees a positive number (lesson 01, step 4).
#include "single_head.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex01 {

using xt::all, xt::newaxis, xt::view;

Tensor3 softmax_last_axis(const Tensor3& scores) {
    const Tensor3 e = xt::exp(scores);  // (B, N_q, N_k), inf for scores above ~88
    const Tensor3 sum = xt::sum(e, {2}, xt::keep_dims);  // (B, N_q, 1), evaluated before use
    return e / sum;
}

Tensor3 attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, Tensor3* weights) {
    const Tensor4 qk = view(q, all(), all(), newaxis(), all()) * view(k, all(), newaxis(), all(), all());
    const Tensor3 w = softmax_last_axis(xt::sum(qk, {3}) / std::sqrt(static_cast<float>(q.shape()[2])));  // (B, N_q, N_k)
    if (weights != nullptr) *weights = w;
    const Tensor4 wv = view(w, all(), all(), all(), newaxis()) * view(v, all(), newaxis(), all(), all());
    return xt::sum(wv, {2});  // (B, N_q, d_v)
}

}  // namespace headwise::ex01
