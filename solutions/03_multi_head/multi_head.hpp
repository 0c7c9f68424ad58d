// Exercise 03 -- multi-head self-attention, the way torch.nn.MultiheadAttention computes it (lesson 03).
//
// You write the function declared here, in multi_head.cpp. This header is shared with the grader:
// do not change the signature.
//
// Dimension letters: B = batch, N_q = queries, N_k = keys and values, H = heads,
// d_head = d_model / H.
#pragma once

#include "exercise.hpp"

namespace headwise {

// nn.MultiheadAttention's parameters, in its layout (lesson 03, step 1). Every projection is
// y = x . W^T + b with W stored (out_features, in_features).
struct MhaParameters {
    std::size_t heads = 1;
    Tensor2 in_proj_weight;   // (3 * d_model, d_model): rows [W_q; W_k; W_v], d_model rows each
    Tensor1 in_proj_bias;     // (3 * d_model): [b_q; b_k; b_v], or empty when there are no biases
    Tensor2 out_proj_weight;  // (d_model, d_model): W_o
    Tensor1 out_proj_bias;    // (d_model), or empty
};

}  // namespace headwise

namespace headwise::ex03 {

// query (B, N_q, d_model), key and value (B, N_k, d_model) -> (B, N_q, d_model), exactly what
// nn.MultiheadAttention(d_model, heads, batch_first=True)(query, key, value) returns. `weights`
// receives every head's attention weights (B, H, N_q, N_k) (average_attn_weights=False).
// Self-attention is the call with query, key and value all the same tensor.
Tensor3 multi_head_attention(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                             Tensor4& weights);

}  // namespace headwise::ex03
