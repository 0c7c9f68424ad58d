// softmax normalised each column (over the queries, axis 1) instead of each row (over the keys).
// Every query's weights must sum to 1 over the keys it looks at: reduce over the last axis (lesson 01, step 4).
#include "single_head.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex01 {

using xt::all, xt::newaxis, xt::view;

Tensor3 softmax_last_axis(const Tensor3& scores) {
    const Tensor3 max = xt::amax(scores, {1}, xt::keep_dims);  // (B, 1, N_k), evaluated before use
    const Tensor3 e = xt::exp(scores - max);                  // (B, N_q, N_k)
    const Tensor3 sum = xt::sum(e, {1}, xt::keep_dims);       // (B, 1, N_k)
    return e / sum;  // each column sums to 1
}

Tensor3 attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, Tensor3* weights) {
    const Tensor4 qk = view(q, all(), all(), newaxis(), all()) * view(k, all(), newaxis(), all(), all());
    const Tensor3 w = softmax_last_axis(xt::sum(qk, {3}) / std::sqrt(static_cast<float>(q.shape()[2])));  // (B, N_q, N_k)
    if (weights != nullptr) *weights = w;
    const Tensor4 wv = view(w, all(), all(), all(), newaxis()) * view(v, all(), newaxis(), all(), all());
    return xt::sum(wv, {2});  // (B, N_q, d_v)
}

}  // namespace headwise::ex01
