// Exercise 05 -- parameter counting.
//
// Read lesson 05 first (./headwise run 5, lessons/05_parameter_count.cpp, docs/05_parameter_count.md).
// Grade with:  ./headwise grade 5    (or: ctest --preset grade -L ex05)
// Stuck? ./headwise hint 5 shows one hint at a time (exercises/05_parameter_count/HINTS.md).
#include "parameter_count.hpp"

#include <string>

namespace headwise::ex05 {

std::size_t parameter_count(std::size_t d_model, std::size_t heads, bool bias) {
    // TODO(ex05): count the numbers in W_q, W_k, W_v, W_o (PyTorch stores the first three stacked
    // in one in_proj_weight) and, when bias is true, in their biases (lesson 05, step 1). Throw
    // headwise::usage_error when heads is 0 or does not divide d_model.
    not_implemented_yet();
}

std::size_t per_head_parameter_count(std::size_t d_model, std::size_t heads, bool bias) {
    // TODO(ex05): add up every head's three (d_head, d_model) projections (and their d_head-wide
    // biases), then the one W_O and its bias (lesson 05, step 2). Compare with parameter_count:
    // lesson 05, step 3 says what you should find.
    not_implemented_yet();
}

}  // namespace headwise::ex05
