// The scores q . k were not divided by sqrt(d): their spread grows with d, softmax saturates to nearly one-hot rows and its gradients vanish.
// Multiply the scores by 1 / sqrt(d) before softmax, d = q.shape()[2] (lesson 01, step 6 shows the difference).
#include "single_head.hpp"

#include "headwise/reference/softmax.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex01 {

using xt::all, xt::newaxis, xt::view;

Tensor3 softmax_last_axis(const Tensor3& scores) { return softmax(scores); }

Tensor3 attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, Tensor3* weights) {
    const Tensor4 qk = view(q, all(), all(), newaxis(), all()) * view(k, all(), newaxis(), all(), all());
    const Tensor3 w = softmax_last_axis(xt::sum(qk, {3}));  // (B, N_q, N_k)
    if (weights != nullptr) *weights = w;
    const Tensor4 wv = view(w, all(), all(), all(), newaxis()) * view(v, all(), newaxis(), all(), all());
    return xt::sum(wv, {2});  // (B, N_q, d_v)
}

}  // namespace headwise::ex01
