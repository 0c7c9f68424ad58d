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
    // TODO(ex04): an (n, n) Mask2, true where query i must not see key j (lesson 04, step 1 draws it).
    not_implemented_yet();
}

Tensor4 masked_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Mask2& attn_mask,
                         const Mask2& key_padding_mask, Tensor4& weights) {
    // TODO(ex04): attention as in exercise 01, per (batch, head), where a query gives no weight at
    // all to a key that attn_mask or key_padding_mask hides and its weights still sum to 1 over the
    // keys it sees (lesson 04, steps 2, 3 and 5). A query that sees no key: zero weights, zero output.
    not_implemented_yet();
}

}  // namespace headwise::ex04
