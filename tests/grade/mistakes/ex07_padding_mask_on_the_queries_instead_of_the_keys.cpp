// The padding mask hid the padded queries (rows) instead of the padded keys (columns).
// Every query must ignore the [PAD] keys: give column j the score -inf when token j is padding (lesson 04, step 5).
#include "ex07_layer_parts.hpp"

namespace headwise::ex07 {

Tensor3 encoder_layer(const LayerWeights& w, const Tensor3& x, const Mask2& key_padding_mask, Tensor4& weights) {
    parts::Wrong wrong;
    wrong.mask_queries = true;
    return parts::layer(w, x, key_padding_mask, weights, wrong);
}

double previous_token_score(const Tensor2& weights, std::size_t n) { return roles::previous_token(weights, n); }

}  // namespace headwise::ex07
