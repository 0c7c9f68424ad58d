// headwise/reference/params.hpp -- counting the parameters, FLOPs and memory of multi-head attention.
//
// Two ways to count, which lesson 05 sets side by side:
//   - walk the weight tensors a module actually holds and add up their sizes;
//   - the closed form 4 * d_model^2 (+ 4 * d_model with biases).
// The per-head layout (separate W_Q^i, W_K^i, W_V^i of d_head rows each) holds the same numbers
// as the fused (3 * d_model, d_model) in_proj_weight, only cut into H pieces.
#pragma once

#include "headwise/reference/attention.hpp"
#include "headwise/base/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace headwise::params {

// One weight tensor as it is stored: its name, its shape and how many numbers it holds.
struct ParameterTensor {
    std::string name;
    std::vector<std::size_t> shape;
    std::size_t count = 0;
};

// The tensors nn.MultiheadAttention stores: in_proj_weight, out_proj_weight and, when present,
// in_proj_bias and out_proj_bias.
std::vector<ParameterTensor> parameters_of(const MultiHeadAttention& m);

// The same weights cut per head. Head h of W_Q is rows h*d_head .. (h+1)*d_head - 1 of w_q
// (PyTorch's (out, in) layout), i.e. columns h*d_head .. of W_Q in the paper's x . W_Q form.
struct PerHeadAttention {
    std::vector<Tensor2> w_q, w_k, w_v;  // H tensors, each (d_head, d_model)
    std::vector<Tensor1> b_q, b_k, b_v;  // H tensors, each (d_head), or empty vectors without bias
    Tensor2 w_o;                         // (d_model, d_model): mixes the concatenated heads
    Tensor1 b_o;                         // (d_model) or empty
};

// Copies the fused module's weights into per-head tensors (nothing is re-drawn).
PerHeadAttention split_per_head(const MultiHeadAttention& m);
std::vector<ParameterTensor> parameters_of(const PerHeadAttention& m);

// The tensors split_per_head would make for d_model and heads -- names, shapes and counts -- without
// allocating them. Throws usage_error when d_model is not divisible by heads.
std::vector<ParameterTensor> per_head_layout(std::size_t d_model, std::size_t heads, bool bias);

// Sum of the counts.
std::size_t total(std::span<const ParameterTensor> tensors);

// Closed forms. All throw usage_error when d_model is not divisible by heads.
// 4 * d_model^2, plus 4 * d_model when there are biases.
std::size_t attention_params(std::size_t d_model, bool bias);
// H * 3 * d_model * d_head + d_model^2, plus H * 3 * d_head + d_model with biases.
std::size_t per_head_params(std::size_t d_model, std::size_t heads, bool bias);

// Floating-point operations (a multiply-add counts 2) for one token of one attention block when it
// attends to `context` keys without a mask: four d_model x d_model projections (8 * d_model^2)
// plus q . k^T and weights . v over all heads (4 * context * d_model).
double flops_per_token(std::size_t d_model, std::size_t context);

// Bytes of the attention weights (B, H, N, N) of one block, `bytes_per_element` each (4 = float).
// Throws usage_error if the product does not fit in 64 bits.
std::uint64_t attention_matrix_bytes(std::size_t batch, std::size_t heads, std::size_t context,
                                     std::size_t bytes_per_element = 4);

// A published model configuration.
struct ModelConfig {
    std::string_view name;
    std::size_t d_model;
    std::size_t heads;
    std::size_t attention_blocks;  // attention modules in the whole model (all layers)
    std::string_view blocks_note;  // how that count is made up
};

// The original Transformer (base), BERT base/large, GPT-2 small/medium/large/XL, GPT-3 175B.
std::span<const ModelConfig> known_models();

// The head counts that divide d_model evenly (1 and d_model included), ascending.
std::vector<std::size_t> valid_head_counts(std::size_t d_model);

// 2362368 -> "2,362,368".
std::string group_digits(std::uint64_t n);
// 2147483648 -> "2.00 GiB"; below 1 KiB -> "512 B".
std::string format_bytes(double bytes);

}  // namespace headwise::params
