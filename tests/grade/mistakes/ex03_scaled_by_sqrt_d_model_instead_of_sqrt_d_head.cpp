// mistake: sqrt(d_model) instead of sqrt(d_head)
// The scores were divided by sqrt(d_model): each head's q . k sums only d_head products, so its scores come out too small and the weights too flat.
// Divide by sqrt(d_head) = sqrt(d_model / H), the width of one head (lesson 03, step 4 measures the difference).
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
        return split_heads(linear(x, xt::view(p.in_proj_weight, xt::range(first, last), xt::all()), b), p.heads);
    };
    AttentionOptions o;
    o.scale = 1.0f / std::sqrt(static_cast<float>(d));  // d_model, not d_head
    const Tensor4 heads = scaled_dot_product_attention(project(query, 0), project(key, 1), project(value, 2), o, &weights);
    return linear(merge_heads(heads), p.out_proj_weight, p.out_proj_bias);
}

}  // namespace headwise::ex03
