// Exercise 03 -- multi-head attention: match torch.nn.MultiheadAttention.
//
// Read lesson 03 first (./headwise run 3, lessons/03_multi_head.cpp, docs/03_multi_head.md).
// Grade with:  ./headwise grade 3    (or: ctest --preset grade -L ex03)
// Stuck? ./headwise hint 3 shows one hint at a time (exercises/03_multi_head/HINTS.md).
//
// You may use the library's pieces from lessons 01 and 02: headwise::linear (y = x . W^T + b),
// headwise::split_heads, headwise::merge_heads (attention.hpp) and headwise::softmax (softmax.hpp).
// Write the per-head attention yourself: scaled_dot_product_attention and MultiHeadAttention::forward
// are the answer, not a step towards it. xt::view(w, xt::range(a, b), xt::all()) is rows a..b-1 of w.
#include "multi_head.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/reference/softmax.hpp"

#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex03 {

Tensor3 multi_head_attention(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                             Tensor4& weights) {
    // TODO(ex03): nn.MultiheadAttention's forward pass (lesson 03, step 2): return the output
    // (B, N_q, d_model) and store the per-head weights (B, H, N_q, N_k) in `weights`. Parameters
    // in PyTorch's layout: in_proj_weight stacks W_q, W_k, W_v (rows 0..d-1, d..2d-1, 2d..3d-1),
    // in_proj_bias likewise (empty: no biases); out_proj_weight and out_proj_bias are W_o and its bias.
    not_implemented_yet();
}

}  // namespace headwise::ex03
