// Exercise 05 -- counting the parameters of multi-head attention (lesson 05).
//
// You write the two functions declared here, in parameter_count.cpp. This header is shared with
// the grader: do not change the signatures.
#pragma once

#include "exercise.hpp"

#include <cstddef>

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

}  // namespace headwise::ex05
