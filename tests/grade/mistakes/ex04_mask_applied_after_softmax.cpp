// The hidden weights were set to 0 after softmax: softmax had already shared each row among all keys, so the visible weights no longer sum to 1.
// Hide the keys before softmax by giving their scores -inf; softmax then renormalises over the visible keys (lesson 04, step 5).
#include "causal_mask.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/reference/softmax.hpp"

#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex04 {

using xt::all, xt::newaxis, xt::view;

Mask2 causal_mask(std::size_t n) { return headwise::causal_mask(n); }

Tensor4 masked_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Mask2& attn_mask,
                         const Mask2& key_padding_mask, Tensor4& weights) {
    const std::size_t batch = q.shape()[0], heads = q.shape()[1], n_q = q.shape()[2], n_k = k.shape()[2];
    const xt::xtensor<float, 5> qk = view(q, all(), all(), all(), newaxis(), all()) * view(k, all(), all(), newaxis(), all(), all());
    Tensor4 scores = xt::sum(qk, {4}) / std::sqrt(static_cast<float>(q.shape()[3]));  // (B, H, N_q, N_k)
    weights = softmax(scores);
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t i = 0; i < n_q; ++i)
                for (std::size_t j = 0; j < n_k; ++j)
                    if ((attn_mask.size() != 0 && attn_mask(i, j)) || (key_padding_mask.size() != 0 && key_padding_mask(b, j)))
                        weights(b, h, i, j) = 0.0f;  // after softmax: rows no longer sum to 1
    const xt::xtensor<float, 5> wv = view(weights, all(), all(), all(), all(), newaxis()) * view(v, all(), all(), newaxis(), all(), all());
    return xt::sum(wv, {3});  // (B, H, N_q, d_head)
}

}  // namespace headwise::ex04
