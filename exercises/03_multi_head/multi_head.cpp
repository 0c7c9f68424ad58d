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

#include "headwise/attention.hpp"
#include "headwise/softmax.hpp"

#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex03 {

Tensor3 multi_head_attention(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                             Tensor4& weights) {
    // TODO(ex03): (lesson 03, step 2 walks through every step)
    //   1. q, k, v = query, key, value projected with rows 0..d-1, d..2d-1, 2d..3d-1 of
    //      in_proj_weight (and the same blocks of in_proj_bias when it is not empty), then split
    //      into heads: (B, H, N, d_head)
    //   2. per (batch, head): weights = softmax(q . k^T / sqrt(d_head)) -- d_head, not d_model
    //      (step 4 measures the difference); store them in `weights` (B, H, N_q, N_k)
    //   3. per-head outputs = weights . v, merged back to (B, N_q, d_model), then projected
    //      with out_proj_weight and out_proj_bias (step 5: W_o mixes the heads)
    not_implemented_yet();
}

}  // namespace headwise::ex03
