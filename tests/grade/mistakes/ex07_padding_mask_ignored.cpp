// The key padding mask was not applied: real tokens attended to the [PAD] tokens of shorter sentences.
// Give every padded key the score -inf before softmax, so its weight is exactly 0 (lesson 04, step 5).
#include "ex07_layer_parts.hpp"

namespace headwise::ex07 {

Tensor3 encoder_layer(const LayerWeights& w, const Tensor3& x, const Mask2& key_padding_mask, Tensor4& weights) {
    parts::Wrong wrong;
    wrong.ignore_padding = true;
    return parts::layer(w, x, key_padding_mask, weights, wrong);
}

double previous_token_score(const Tensor2& weights, std::size_t n) { return roles::previous_token(weights, n); }

}  // namespace headwise::ex07
