// Exercise 05 -- parameter counting.
//
// Read lesson 05 first (./headwise run 5, lessons/05_parameter_count.cpp, docs/05_parameter_count.md).
// Grade with:  ./headwise grade 5    (or: ctest --preset grade -L ex05)
// Stuck? ./headwise hint 5 shows one hint at a time (exercises/05_parameter_count/HINTS.md).
#include "parameter_count.hpp"

#include <string>

namespace headwise::ex05 {

std::size_t parameter_count(std::size_t d_model, std::size_t heads, bool bias) {
    // TODO(ex05): how many numbers nn.MultiheadAttention(d_model, heads, bias) learns (lesson 05,
    // step 1). Bad input (heads = 0, or heads not dividing d_model): headwise::usage_error.
    not_implemented_yet();
}

std::size_t per_head_parameter_count(std::size_t d_model, std::size_t heads, bool bias) {
    // TODO(ex05): the same module counted the paper's way, head by head plus the shared output
    // projection (lesson 05, step 2). Bad input as in parameter_count.
    not_implemented_yet();
}

std::uint64_t attention_flops_per_token(std::size_t d_model, std::size_t context) {
    // TODO(ex05): FLOPs per token of one attention block at context length `context` (lesson 05,
    // step 5). At published sizes this passes 2^32.
    not_implemented_yet();
}

std::uint64_t attention_matrix_bytes(std::size_t batch, std::size_t heads, std::size_t context) {
    // TODO(ex05): bytes of one block's float32 attention weights (lesson 05, step 5). At long
    // context this passes 2^32.
    not_implemented_yet();
}

}  // namespace headwise::ex05
