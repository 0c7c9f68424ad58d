// mistake: 0 instead of -inf
// Hidden scores were set to 0 instead of -inf: exp(0) = 1, so every hidden key still gets a share of the weight.
// A hidden key needs the score -inf, because exp(-inf) = 0 is the only way softmax gives it weight exactly 0 (lesson 04, steps 2 and 5).
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
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t i = 0; i < n_q; ++i)
                for (std::size_t j = 0; j < n_k; ++j)
                    if ((attn_mask.size() != 0 && attn_mask(i, j)) || (key_padding_mask.size() != 0 && key_padding_mask(b, j)))
                        scores(b, h, i, j) = 0.0f;  // should be -inf
    weights = softmax(scores);
    const xt::xtensor<float, 5> wv = view(weights, all(), all(), all(), all(), newaxis()) * view(v, all(), all(), newaxis(), all(), all());
    return xt::sum(wv, {3});  // (B, H, N_q, d_head)
}

}  // namespace headwise::ex04
