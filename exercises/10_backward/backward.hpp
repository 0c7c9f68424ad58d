// Exercise 10 -- the backward pass of attention (lesson 10).
//
// You write the two functions declared here, in backward.cpp. This header is shared with the
// grader: do not change the signatures.
//
// Gradients are named after what they are the gradient of: dp = dL/dp, ds = dL/ds, dq = dL/dq...
// Dimension letters: B = batch, H = heads, N = tokens, d_head = per-head width.
#pragma once

#include "exercise.hpp"

namespace headwise::gradients {

// What attention_backward returns.
struct AttentionGrads {
    Tensor4 dq, dk, dv;  // each (B, H, N, d_head)
};

}  // namespace headwise::gradients

namespace headwise::ex10 {

// The backward of one row of softmax. p (N) is the row's softmax output, p = softmax(s), and
// dp (N) is dL/dp. Returns ds = dL/ds (N): the softmax's Jacobian applied to dp, in O(N).
Tensor1 softmax_backward_row(const Tensor1& p, const Tensor1& dp);

// dL/dq, dL/dk, dL/dv of self-attention out = softmax(q k^T / sqrt(d_head) + masks) v, given
// d_out = dL/dout, for every (batch, head):
//   q, k, v, d_out  (B, H, N, d_head)  ->  dq, dk, dv  (B, H, N, d_head)
//   causal            query i sees keys 0..i only
//   key_padding_mask  (B, N): key j of batch element b is hidden from all its queries; empty = none
// The forward's weights are not given: recompute them. A hidden key gets no gradient, and a query
// that sees no key at all (its weights and output are 0) gives no gradient either: never NaN.
using gradients::AttentionGrads;  // {dq, dk, dv}, each (B, H, N, d_head)
AttentionGrads attention_backward(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Tensor4& d_out,
                                  bool causal, const Mask2& key_padding_mask);

}  // namespace headwise::ex10
