// headwise/reference/attention_backward.hpp -- the backward of scaled dot-product attention: how
// the loss changes with q, k and v, given how it changes with the output (d_out).
//
// For one (batch, head), with P the attention weights (N_q, N_k) and O = P . v the output:
//   dv = P^T . d_out                       (N_k, d_head)
//   dP = d_out . v^T                       (N_q, N_k)
//   dS = P o (dP - D),  D_i = sum_j P_ij dP_ij = sum_c d_out_ic O_ic    (the softmax's backward)
//   dq = scale * dS . k                    (N_q, d_head)
//   dk = scale * dS^T . q                  (N_k, d_head)
// A masked key has P_ij = 0, so it receives no gradient; a query whose keys are all masked has a
// zero output whatever q, k and v are, so its row gives zero gradients (never NaN).
#pragma once

#include "headwise/base/attention_options.hpp"
#include "headwise/base/tensor.hpp"

namespace headwise {

struct AttentionGrads {
    Tensor4 dq;  // (B, H, N_q, d_head), the shape of q
    Tensor4 dk;  // (B, H, N_k, d_head), the shape of k
    Tensor4 dv;  // (B, H, N_k, d_head), the shape of v
};

// The backward of scaled_dot_product_attention (same options: causal, attn_mask, key_padding_mask,
// scale). d_out (B, H, N_q, d_head). Plain loops in double: the oracle. A fully masked row gives 0
// grads. usage_error naming the shapes when q, k, v, d_out or the masks do not fit together.
// `bias` (H, N_q, N_k), where given, is added to head h's scores (ALiBi, positions.hpp): a constant,
// so it has no gradient of its own, but it changes P and so every other gradient.
AttentionGrads attention_backward_reference(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Tensor4& d_out,
                                            const AttentionOptions& options = {}, const Tensor3* bias = nullptr);

// The fast one (fast/fused_backward.hpp does the work): flash-style tiles, P recomputed from the
// forward's log-sum-exp, no N_q x N_k buffer, the forward's thread pool and BLAS. Same contract.
AttentionGrads scaled_dot_product_attention_backward(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                                                     const Tensor4& d_out, const AttentionOptions& options = {});

}  // namespace headwise
