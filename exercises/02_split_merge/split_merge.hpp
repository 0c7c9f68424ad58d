// Exercise 02 -- split the model width into heads, and merge the heads back (lesson 02).
//
// You write the two functions declared here, in split_merge.cpp. This header is shared with the
// grader: do not change the signatures.
//
// Dimension letters: B = batch, N = tokens, H = heads, d_head = d_model / H.
#pragma once

#include "exercise.hpp"

namespace headwise::ex02 {

// (B, N, d_model) -> (B, H, N, d_head): each token's d_model features are cut into H consecutive
// groups of d_head, and group h of every token goes to head h. Head h of batch element b is then a
// plain (N, d_head) matrix: token n's features h * d_head ... h * d_head + d_head - 1.
// Throws headwise::usage_error when heads is 0 or does not divide d_model.
Tensor4 split_heads(const Tensor3& x, std::size_t heads);

// (B, H, N, d_head) -> (B, N, H * d_head): the exact inverse, merge_heads(split_heads(x, H)) == x.
Tensor3 merge_heads(const Tensor4& x);

}  // namespace headwise::ex02
