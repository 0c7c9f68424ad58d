// With bias=true the biases were not counted: in_proj_bias (3 d_model) and out_proj_bias (d_model) are parameters too.
// Add 4 d_model when bias is true: one bias entry per output feature of each projection (lesson 05, step 1).
#include "parameter_count.hpp"

#include "headwise/reference/params.hpp"

namespace headwise::ex05 {

std::size_t parameter_count(std::size_t d_model, std::size_t heads, bool bias) {
    if (heads == 0 || d_model % heads != 0) throw usage_error("heads must divide d_model");
    return 4 * d_model * d_model;  // biases missing;
}

std::size_t per_head_parameter_count(std::size_t d_model, std::size_t heads, bool bias) {
    return parameter_count(d_model, heads, bias);
}

// Not part of this mistake: the library's own counts.
std::uint64_t attention_flops_per_token(std::size_t d_model, std::size_t context) {
    return static_cast<std::uint64_t>(params::flops_per_token(d_model, context));
}

std::uint64_t attention_matrix_bytes(std::size_t batch, std::size_t heads, std::size_t context) {
    return params::attention_matrix_bytes(batch, heads, context);
}

}  // namespace headwise::ex05
