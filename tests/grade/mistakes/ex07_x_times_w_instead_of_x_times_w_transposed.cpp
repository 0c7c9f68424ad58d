// The projections computed x . W instead of x . W^T: the checkpoint stores weights as (out_features, in_features).
// A linear layer is y = x . W^T + b: sum over c of x(b, i, c) * W(o, c) (lesson 07, step 4).
#include "ex07_layer_parts.hpp"

namespace headwise::ex07 {

Tensor3 encoder_layer(const LayerWeights& w, const Tensor3& x, const Mask2& key_padding_mask, Tensor4& weights) {
    parts::Wrong wrong;
    wrong.x_times_w = true;
    return parts::layer(w, x, key_padding_mask, weights, wrong);
}

double previous_token_score(const Tensor2& weights, std::size_t n) { return roles::previous_token(weights, n); }

}  // namespace headwise::ex07
