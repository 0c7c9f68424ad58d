// The mask hides the keys *before* each query (j < i) instead of after it: every token reads the future and never the past.
// mask(i, j) must be true when key j comes after query i, j > i: the upper triangle (lesson 04, step 1).
#include "causal_mask.hpp"

#include "headwise/reference/attention.hpp"

namespace headwise::ex04 {

Mask2 causal_mask(std::size_t n) {
    Mask2 mask = Mask2::from_shape({n, n});  // (N, N)
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) mask(i, j) = j < i;  // the lower triangle;
    return mask;
}

Tensor4 masked_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Mask2& attn_mask,
                         const Mask2& key_padding_mask, Tensor4& weights) {
    AttentionOptions o;
    o.attn_mask = attn_mask.size() != 0 ? &attn_mask : nullptr;
    o.key_padding_mask = key_padding_mask.size() != 0 ? &key_padding_mask : nullptr;
    return scaled_dot_product_attention(q, k, v, o, &weights);
}

}  // namespace headwise::ex04
