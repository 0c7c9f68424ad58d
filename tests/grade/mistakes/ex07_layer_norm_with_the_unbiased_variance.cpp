// LayerNorm divided the squared deviations by d_model - 1 (the unbiased variance).
// torch.nn.LayerNorm uses the biased variance: divide by d_model, then add eps inside the square root.
#include "ex07_layer_parts.hpp"

namespace headwise::ex07 {

Tensor3 encoder_layer(const LayerWeights& w, const Tensor3& x, const Mask2& key_padding_mask, Tensor4& weights) {
    parts::Wrong wrong;
    wrong.unbiased = true;
    return parts::layer(w, x, key_padding_mask, weights, wrong);
}

double previous_token_score(const Tensor2& weights, std::size_t n) { return roles::previous_token(weights, n); }

}  // namespace headwise::ex07
