// The LayerNorms were put before each block (x + attn(LN(x)), as in GPT-2) instead of after each residual sum.
// BERT is post-LN: h = LayerNorm(x + attention(x)), then y = LayerNorm(h + ffn(h)) (lesson 07, step 4).
#include "ex07_layer_parts.hpp"

namespace headwise::ex07 {

Tensor3 encoder_layer(const LayerWeights& w, const Tensor3& x, const Mask2& key_padding_mask, Tensor4& weights) {
    parts::Wrong wrong;
    wrong.pre_ln = true;
    return parts::layer(w, x, key_padding_mask, weights, wrong);
}

double previous_token_score(const Tensor2& weights, std::size_t n) { return roles::previous_token(weights, n); }

}  // namespace headwise::ex07
