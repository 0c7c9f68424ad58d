// Attention ran on the raw inputs split into heads: the q, k, v projections with in_proj_weight were computed (or not) but never used.
// Split the *projected* tensors, x . W_q^T + b_q and so on, not query, key and value themselves (lesson 03, step 2).
#include "multi_head.hpp"

#include "headwise/reference/attention.hpp"

#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex03 {

Tensor3 multi_head_attention(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                             Tensor4& weights) {
    const std::size_t d = p.out_proj_weight.shape()[0];
    const Tensor3 q = linear(query, xt::view(p.in_proj_weight, xt::range(0, d), xt::all()));  // computed, then unused
    (void)q;
    const Tensor4 heads = scaled_dot_product_attention(split_heads(query, p.heads), split_heads(key, p.heads),
                                                       split_heads(value, p.heads), {}, &weights);
    return linear(merge_heads(heads), p.out_proj_weight, p.out_proj_bias);
}

}  // namespace headwise::ex03
