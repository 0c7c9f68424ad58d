// Exercise 04 -- the causal mask and masked attention.
//
// Read lesson 04 first (./headwise run 4, lessons/04_causal_mask.cpp, docs/04_causal_mask.md).
// Grade with:  ./headwise grade 4    (or: ctest --preset grade -L ex04)
// Stuck? ./headwise hint 4 shows one hint at a time (exercises/04_causal_mask/HINTS.md).
//
// Mask2 is xt::xtensor<bool, 2>: Mask2::from_shape({N, N}) makes one, m(i, j) reads or writes an
// entry, m.size() == 0 means "no mask". std::numeric_limits<float>::infinity() is +inf.
#include "causal_mask.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace headwise::ex04 {

Mask2 causal_mask(std::size_t n) {
    // BEGIN SOLUTION
    Mask2 mask = Mask2::from_shape({n, n});  // (N, N)
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) mask(i, j) = j > i;  // key j is in query i's future
    return mask;
    // STUB
    // TODO(ex04): an (n, n) Mask2, true where query i must not see key j (lesson 04, step 1 draws it).
    not_implemented_yet();
    // END SOLUTION
}

Tensor4 masked_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Mask2& attn_mask,
                         const Mask2& key_padding_mask, Tensor4& weights) {
    // BEGIN SOLUTION
    const std::size_t batch = q.shape()[0], heads = q.shape()[1], n_q = q.shape()[2], d_head = q.shape()[3];
    const std::size_t n_k = k.shape()[2];
    const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
    const float neg_inf = -std::numeric_limits<float>::infinity();

    weights = Tensor4::from_shape({batch, heads, n_q, n_k});  // (B, H, N_q, N_k)
    Tensor4 out = Tensor4::from_shape({batch, heads, n_q, d_head});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t i = 0; i < n_q; ++i) {
                // Hidden keys get a score of -inf *before* softmax: exp(-inf) = 0, so they receive
                // no weight and the visible keys' weights still sum to 1.
                float m = neg_inf;
                for (std::size_t j = 0; j < n_k; ++j) {
                    const bool hidden = (attn_mask.size() != 0 && attn_mask(i, j)) ||
                                        (key_padding_mask.size() != 0 && key_padding_mask(b, j));
                    float dot = 0.0f;
                    for (std::size_t c = 0; c < d_head; ++c) dot += q(b, h, i, c) * k(b, h, j, c);
                    weights(b, h, i, j) = hidden ? neg_inf : dot * scale;
                    m = std::max(m, weights(b, h, i, j));
                }
                float sum = 0.0f;
                for (std::size_t j = 0; j < n_k; ++j) {
                    // A query that sees no key at all (m = -inf): all zeros, never exp(-inf + inf) = NaN.
                    weights(b, h, i, j) = m == neg_inf ? 0.0f : std::exp(weights(b, h, i, j) - m);
                    sum += weights(b, h, i, j);
                }
                for (std::size_t j = 0; j < n_k; ++j) weights(b, h, i, j) = sum > 0.0f ? weights(b, h, i, j) / sum : 0.0f;
                for (std::size_t c = 0; c < d_head; ++c) {
                    float acc = 0.0f;
                    for (std::size_t j = 0; j < n_k; ++j) acc += weights(b, h, i, j) * v(b, h, j, c);
                    out(b, h, i, c) = acc;
                }
            }
    return out;
    // STUB
    // TODO(ex04): attention as in exercise 01, per (batch, head), where a query gives no weight at
    // all to a key that attn_mask or key_padding_mask hides and its weights still sum to 1 over the
    // keys it sees (lesson 04, steps 2, 3 and 5). A query that sees no key: zero weights, zero output.
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex04
