// GELU was computed with the tanh approximation; this model was trained with the exact erf form.
// Use 0.5 * z * (1 + erf(z / sqrt(2))): config.json says hidden_act "gelu", the erf one (lesson 07, step 4).
#include "ex07_layer_parts.hpp"

namespace headwise::ex07 {

Tensor3 encoder_layer(const LayerWeights& w, const Tensor3& x, const Mask2& key_padding_mask, Tensor4& weights) {
    parts::Wrong wrong;
    wrong.tanh_gelu = true;
    return parts::layer(w, x, key_padding_mask, weights, wrong);
}

double previous_token_score(const Tensor2& weights, std::size_t n) { return roles::previous_token(weights, n); }

}  // namespace headwise::ex07
