// mistake: scaled by d instead of sqrt(d)
// The scores were divided by d instead of sqrt(d): q . k has variance ~d, so dividing by d shrinks it to ~1/d and every row of weights turns nearly uniform.
// Divide by sqrt(d), which brings the variance back to 1 whatever the width (lesson 01, step 6 measures it).
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
    const Tensor3 w = softmax_last_axis(xt::sum(qk, {3}) / static_cast<float>(q.shape()[2]));  // (B, N_q, N_k)
    if (weights != nullptr) *weights = w;
    const Tensor4 wv = view(w, all(), all(), all(), newaxis()) * view(v, all(), newaxis(), all(), all());
    return xt::sum(wv, {2});  // (B, N_q, d_v)
}

}  // namespace headwise::ex01
