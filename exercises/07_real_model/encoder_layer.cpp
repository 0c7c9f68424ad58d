// Exercise 07 -- one encoder layer of a real trained model.
//
// Read lesson 07 first (./headwise run 7, lessons/07_real_model.cpp, docs/07_real_model.md):
// step 4 computes exactly this layer, one shape at a time.
// Grade with:  ./headwise grade 7    (or: ctest --preset grade -L ex07)
// Stuck? ./headwise hint 7 shows one hint at a time (exercises/07_real_model/HINTS.md).
//
// Tensor3::from_shape({B, N, d}) makes a tensor, t(b, i, c) reads or writes an entry,
// t.shape()[k] is a size. std::erf and std::sqrt are in <cmath>.
#include "encoder_layer.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace headwise::ex07 {

namespace {

// Helpers you may want (lesson 07, step 4): linear (y = x . w^T + b), layer_norm, self-attention
// with the key padding mask. Write them here.

}  // namespace

Tensor3 encoder_layer(const LayerWeights& w, const Tensor3& x, const Mask2& key_padding_mask, Tensor4& weights) {
    // TODO(ex07): attention (q, k, v = x . W^T + b, per head softmax(q k^T / sqrt(d_head)) with
    // padded KEYS at -inf, fill `weights`, then W_O), h = LayerNorm(x + attention), then
    // y = LayerNorm(h + GELU(h . w_1^T + b_1) . w_2^T + b_2). Lesson 07, step 4, in that order.
    not_implemented_yet();
}

double previous_token_score(const Tensor2& weights, std::size_t n) {
    // TODO(ex07): the mean of weights(i, i - 1) over i = 1 .. n-1 (lesson 07, step 6).
    not_implemented_yet();
}

}  // namespace headwise::ex07
