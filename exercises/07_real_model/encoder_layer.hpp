// Exercise 07 -- one encoder layer of a real trained model (lesson 07).
//
// You write the two functions declared here, in encoder_layer.cpp. This header is shared with the
// grader: do not change the signatures.
//
// The grader runs your layer on a small BertLayer whose output Hugging Face transformers computed
// (tests/fixtures/bert/layer_d32_h4) and, when the model is cached (scripts/fetch-model), on the
// real layers of all-MiniLM-L6-v2 against transformers' hidden states.
// Dimension letters: B = sentences, N = tokens, H = heads, d_head = d_model / H, d_ffn = FFN width.
#pragma once

#include "exercise.hpp"

namespace headwise::bert_layer {

// One BERT encoder layer, in PyTorch's layout: every weight is (out_features, in_features) and a
// linear layer computes y = x . W^T + b.
struct LayerWeights {
    std::size_t heads = 1;        // H
    float eps = 1e-12f;           // LayerNorm's epsilon
    Tensor2 w_q, w_k, w_v;        // (d_model, d_model)  attention.self.{query,key,value}.weight
    Tensor1 b_q, b_k, b_v;        // (d_model)
    Tensor2 w_o;                  // (d_model, d_model)  attention.output.dense.weight
    Tensor1 b_o;                  // (d_model)
    Tensor1 ln1_gamma, ln1_beta;  // (d_model)           attention.output.LayerNorm
    Tensor2 w_1;                  // (d_ffn, d_model)    intermediate.dense.weight
    Tensor1 b_1;                  // (d_ffn)
    Tensor2 w_2;                  // (d_model, d_ffn)    output.dense.weight
    Tensor1 b_2;                  // (d_model)
    Tensor1 ln2_gamma, ln2_beta;  // (d_model)           output.LayerNorm
};

}  // namespace headwise::bert_layer

namespace headwise::ex07 {

// The layer's weights (above).
using bert_layer::LayerWeights;

// The layer, post-LayerNorm as in BERT:
//   a = MultiHead(x)                          softmax(q k^T / sqrt(d_head)) v per head, then W_O
//   h = LayerNorm_1(x + a)
//   y = LayerNorm_2(h + GELU(h . w_1^T + b_1) . w_2^T + b_2)
// with GELU(z) = z/2 (1 + erf(z / sqrt 2)) and LayerNorm over d_model with the biased variance:
// (v - mean) / sqrt(variance + eps) * gamma + beta.
//   x                 (B, N, d_model)
//   key_padding_mask  (B, N): true = that token is [PAD]; no query may attend to it
//   weights           receives the attention weights (B, H, N, N)
// returns y (B, N, d_model).
Tensor3 encoder_layer(const LayerWeights& w, const Tensor3& x, const Mask2& key_padding_mask, Tensor4& weights);

// One head's weights for one sentence, (N, N) rows = queries, and its n real tokens (the rest
// is padding): the mean over queries i = 1 .. n-1 of the weight on the previous token, i - 1.
// 1 = a perfect previous-token head. n < 2: 0.
double previous_token_score(const Tensor2& weights, std::size_t n);

}  // namespace headwise::ex07
