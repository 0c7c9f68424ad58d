// Exercise 05 -- counting the parameters of multi-head attention (lesson 05).
//
// You write the four functions declared here, in parameter_count.cpp. This header is shared with
// the grader: do not change the signatures. The counts reach trillions at published sizes: the
// return type is 64 bits wide, and so must be every step that computes them.
#pragma once

#include "exercise.hpp"

#include <cstddef>
#include <cstdint>

namespace headwise::ex05 {

// How many numbers torch.nn.MultiheadAttention(d_model, heads, bias=bias) learns: its
// in_proj_weight, out_proj_weight and, with bias, in_proj_bias and out_proj_bias.
// Throws headwise::usage_error when heads is 0 or does not divide d_model.
std::size_t parameter_count(std::size_t d_model, std::size_t heads, bool bias);

// The same module written per head, as in the paper: every head h has its own W_Q^h, W_K^h, W_V^h
// (each projecting d_model features to d_head = d_model / heads) and, with bias, a bias of d_head
// numbers for each; one W_O (d_model, d_model) and, with bias, one output bias (d_model) mix the
// concatenated heads. Throws headwise::usage_error like parameter_count.
std::size_t per_head_parameter_count(std::size_t d_model, std::size_t heads, bool bias);

// The floating-point operations one attention block spends per token at context length N
// (a multiply-add counts as 2): the four projections of the token, plus its scores against N keys
// and its weighted sum of N values. Lesson 05, step 5.
std::uint64_t attention_flops_per_token(std::size_t d_model, std::size_t context);

// Bytes of the attention weights (B, H, N, N) of one block, in float32 (4 bytes each).
std::uint64_t attention_matrix_bytes(std::size_t batch, std::size_t heads, std::size_t context);

}  // namespace headwise::ex05
