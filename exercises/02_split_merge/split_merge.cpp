// Exercise 02 -- split and merge heads.
//
// Read lesson 02 first (./headwise run 2, lessons/02_split_merge.cpp, docs/02_split_merge.md).
// Grade with:  ./headwise grade 2    (or: ctest --preset grade -L ex02)
// Stuck? ./headwise hint 2 shows one hint at a time (exercises/02_split_merge/HINTS.md).
//
// Tensor4::from_shape({B, H, N, d_head}) makes the result; out(b, h, n, c) and x(b, n, f) read and
// write single elements. Plain loops are all you need (and keep re-grading fast).
#include "split_merge.hpp"

#include <string>

namespace headwise::ex02 {

Tensor4 split_heads(const Tensor3& x, std::size_t heads) {
    // TODO(ex02): x (B, N, d_model) as H heads (B, H, N, d_head): head h of token t holds that
    // token's features h*d_head .. (h+1)*d_head-1 (lesson 02, step 2). Bad input (heads = 0, or
    // heads not dividing d_model): headwise::usage_error.
    not_implemented_yet();
}

Tensor3 merge_heads(const Tensor4& x) {
    // TODO(ex02): the inverse of split_heads: (B, H, N, d_head) back to (B, N, H * d_head), so that
    // merge_heads(split_heads(x, H)) gives x exactly (lesson 02, step 4).
    not_implemented_yet();
}

}  // namespace headwise::ex02
