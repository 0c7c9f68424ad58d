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
    // TODO(ex02): check that heads divides d_model (throw headwise::usage_error otherwise), then
    // fill a (B, H, N, d_head) tensor. Lesson 02, step 2: reshape the last axis into (H, d_head),
    // then swap N and H. Step 3 shows why a single reshape to (B, H, N, d_head) is wrong.
    not_implemented_yet();
}

Tensor3 merge_heads(const Tensor4& x) {
    // TODO(ex02): the inverse of split_heads: swap H and N back, then flatten (H, d_head) into
    // d_model = H * d_head (lesson 02, step 4). merge_heads(split_heads(x, H)) must give x exactly.
    not_implemented_yet();
}

}  // namespace headwise::ex02
