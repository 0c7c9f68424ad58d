// mistake: multiplied by H
// Every head was given full d_model x d_model projections, so the count grows with H. Heads share the width instead: each is d_head = d_model / H wide.
// Splitting into heads cuts the same W_q, W_k, W_v into H slices; the total stays 4 d_model^2 (+ 4 d_model) for any H (lesson 05, steps 2 and 3).
#include "parameter_count.hpp"

#include "headwise/reference/params.hpp"

namespace headwise::ex05 {

std::size_t parameter_count(std::size_t d_model, std::size_t heads, bool bias) {
    if (heads == 0 || d_model % heads != 0) throw usage_error("heads must divide d_model");
    return heads * 3 * (d_model * d_model + (bias ? d_model : 0)) + d_model * d_model + (bias ? d_model : 0);;
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
