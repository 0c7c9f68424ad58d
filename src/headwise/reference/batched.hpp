// headwise/reference/batched.hpp -- the two matrix products of attention, one per (batch, head), exposed
// as separate steps so lessons can print and change what lies between them (scale, mask, softmax).
#pragma once

#include "headwise/base/tensor.hpp"

namespace headwise {

// scores (B, H, N_q, N_k) = q (B, H, N_q, d_head) . k^T (B, H, d_head, N_k) * scale
Tensor4 attention_scores(const Tensor4& q, const Tensor4& k, float scale);

// out (B, H, N_q, d_head) = weights (B, H, N_q, N_k) . v (B, H, N_k, d_head)
Tensor4 apply_weights(const Tensor4& weights, const Tensor4& v);

}  // namespace headwise
