// mistake: x . W instead of x . W^T
// The projections computed x . W where PyTorch computes x . W^T: weights are stored (out_features, in_features), one output feature per row.
// Use y = x . W^T + b, which is what headwise::linear(x, w, b) does (lesson 01, step 2; lesson 03, step 1).
#include "multi_head.hpp"

#include "headwise/reference/attention.hpp"

#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex03 {

Tensor3 multi_head_attention(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                             Tensor4& weights) {
    const std::size_t d = p.out_proj_weight.shape()[0];
    auto project = [&](const Tensor3& x, std::size_t block) {  // block 0, 1, 2 = W_q, W_k, W_v
        const std::size_t first = block * d, last = first + d;
        const Tensor1 b = p.in_proj_bias.size() == 0 ? Tensor1() : Tensor1(xt::view(p.in_proj_bias, xt::range(first, last)));
        return split_heads(linear(x, Tensor2(xt::transpose(xt::view(p.in_proj_weight, xt::range(first, last), xt::all()))), b), p.heads);
    };
    const Tensor4 heads = scaled_dot_product_attention(project(query, 0), project(key, 1), project(value, 2), {}, &weights);
    return linear(merge_heads(heads), Tensor2(xt::transpose(p.out_proj_weight)), p.out_proj_bias);
}

}  // namespace headwise::ex03
