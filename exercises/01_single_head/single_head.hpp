// Exercise 01 -- softmax and single-head scaled dot-product attention (lesson 01).
//
// You write the two functions declared here, in single_head.cpp. This header is shared with the
// grader: do not change the signatures.
//
// Dimension letters: B = batch, N_q = queries, N_k = keys, d = query/key width, d_v = value width.
#pragma once

#include "exercise.hpp"

namespace headwise::ex01 {

// weights (B, N_q, N_k) = softmax of scores (B, N_q, N_k) over the last axis: for every query
// (b, i), weights(b, i, :) is positive and sums to 1. Must stay finite for scores like 1e4.
Tensor3 softmax_last_axis(const Tensor3& scores);

// out (B, N_q, d_v) = softmax(q . k^T / sqrt(d)) . v
//   q (B, N_q, d), k (B, N_k, d), v (B, N_k, d_v)
// When `weights` is not null it also receives the attention weights (B, N_q, N_k).
Tensor3 attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, Tensor3* weights = nullptr);

}  // namespace headwise::ex01
