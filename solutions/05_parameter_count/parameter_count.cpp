// Exercise 05 -- parameter counting.
//
// Read lesson 05 first (./headwise run 5, lessons/05_parameter_count.cpp, docs/05_parameter_count.md).
// Grade with:  ./headwise grade 5    (or: ctest --preset grade -L ex05)
// Stuck? ./headwise hint 5 shows one hint at a time (exercises/05_parameter_count/HINTS.md).
#include "parameter_count.hpp"

#include <string>

namespace headwise::ex05 {

std::size_t parameter_count(std::size_t d_model, std::size_t heads, bool bias) {
    // BEGIN SOLUTION
    if (heads == 0 || d_model % heads != 0) {
        throw usage_error("d_model = " + std::to_string(d_model) + " is not divisible by heads = " + std::to_string(heads));
    }
    // in_proj_weight (3 d_model, d_model) + out_proj_weight (d_model, d_model): four d_model^2
    // matrices, however many heads. Biases: in_proj_bias (3 d_model) + out_proj_bias (d_model).
    return 4 * d_model * d_model + (bias ? 4 * d_model : 0);
    // STUB
    // TODO(ex05): how many numbers nn.MultiheadAttention(d_model, heads, bias) learns (lesson 05,
    // step 1). Bad input (heads = 0, or heads not dividing d_model): headwise::usage_error.
    not_implemented_yet();
    // END SOLUTION
}

std::size_t per_head_parameter_count(std::size_t d_model, std::size_t heads, bool bias) {
    // BEGIN SOLUTION
    if (heads == 0 || d_model % heads != 0) {
        throw usage_error("d_model = " + std::to_string(d_model) + " is not divisible by heads = " + std::to_string(heads));
    }
    const std::size_t d_head = d_model / heads;
    const std::size_t per_head = 3 * d_head * d_model + (bias ? 3 * d_head : 0);  // W_Q^h, W_K^h, W_V^h (+ biases)
    const std::size_t w_o = d_model * d_model + (bias ? d_model : 0);              // shared by all heads
    return heads * per_head + w_o;
    // STUB
    // TODO(ex05): the same module counted the paper's way, head by head plus the shared output
    // projection (lesson 05, step 2). Bad input as in parameter_count.
    not_implemented_yet();
    // END SOLUTION
}

std::uint64_t attention_flops_per_token(std::size_t d_model, std::size_t context) {
    // BEGIN SOLUTION
    const std::uint64_t d = d_model, n = context;
    // Projections: four (d, d) matrix-vector products, 2 d^2 FLOPs each. Attention: q . k_j for N
    // keys (2 d each) and the sum of N weighted values (2 d each).
    return 8 * d * d + 4 * n * d;
    // STUB
    // TODO(ex05): FLOPs per token of one attention block at context length `context` (lesson 05,
    // step 5). At published sizes this passes 2^32.
    not_implemented_yet();
    // END SOLUTION
}

std::uint64_t attention_matrix_bytes(std::size_t batch, std::size_t heads, std::size_t context) {
    // BEGIN SOLUTION
    const std::uint64_t n = context;
    return std::uint64_t{batch} * heads * n * n * sizeof(float);  // (B, H, N, N) floats
    // STUB
    // TODO(ex05): bytes of one block's float32 attention weights (lesson 05, step 5). At long
    // context this passes 2^32.
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex05
