// Exercise 04 -- the causal mask and masked attention (lesson 04).
//
// You write the two functions declared here, in causal_mask.cpp. This header is shared with the
// grader: do not change the signatures.
//
// Masks follow PyTorch's boolean convention: true = masked out (hidden), false = visible.
// Dimension letters: B = batch, H = heads, N_q = queries, N_k = keys, d_head = per-head width.
#pragma once

#include "exercise.hpp"

namespace headwise::ex04 {

// The (N, N) causal mask: query i may see keys 0..i, so mask(i, j) is true exactly when key j
// lies in query i's future.
Mask2 causal_mask(std::size_t n);

// weights = softmax(q . k^T / sqrt(d_head), with every hidden key removed), out = weights . v,
// for every (batch, head):
//   q (B, H, N_q, d_head), k and v (B, H, N_k, d_head) -> out (B, H, N_q, d_head)
//   attn_mask         (N_q, N_k), the same for every batch element and head; empty = no mask
//   key_padding_mask  (B, N_k): key j of batch element b is padding, hidden from all its queries;
//                     empty = no padding
// `weights` receives (B, H, N_q, N_k). A hidden key gets weight exactly 0 and every row's weights
// still sum to 1 -- except a query that can see no key at all: its weights and output are all 0.
Tensor4 masked_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Mask2& attn_mask,
                         const Mask2& key_padding_mask, Tensor4& weights);

}  // namespace headwise::ex04
