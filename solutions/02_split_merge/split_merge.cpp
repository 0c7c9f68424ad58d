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
    // BEGIN SOLUTION
    const std::size_t batch = x.shape()[0], n = x.shape()[1], d_model = x.shape()[2];
    if (heads == 0 || d_model % heads != 0) {
        throw usage_error("split_heads: d_model = " + std::to_string(d_model) + " is not divisible by heads = " +
                          std::to_string(heads));
    }
    const std::size_t d_head = d_model / heads;
    // Viewing the last axis as (H, d_head) makes (B, N, H, d_head); swapping N and H makes
    // (B, H, N, d_head). Together: feature h * d_head + c of token t is element c of head h.
    Tensor4 out = Tensor4::from_shape({batch, heads, n, d_head});  // (B, H, N, d_head)
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t h = 0; h < heads; ++h)
                for (std::size_t c = 0; c < d_head; ++c) out(b, h, t, c) = x(b, t, h * d_head + c);
    return out;
    // STUB
    // TODO(ex02): x (B, N, d_model) as H heads (B, H, N, d_head): head h of token t holds that
    // token's features h*d_head .. (h+1)*d_head-1 (lesson 02, step 2). Bad input (heads = 0, or
    // heads not dividing d_model): headwise::usage_error.
    not_implemented_yet();
    // END SOLUTION
}

Tensor3 merge_heads(const Tensor4& x) {
    // BEGIN SOLUTION
    const std::size_t batch = x.shape()[0], heads = x.shape()[1], n = x.shape()[2], d_head = x.shape()[3];
    Tensor3 out = Tensor3::from_shape({batch, n, heads * d_head});  // (B, N, d_model)
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t h = 0; h < heads; ++h)
                for (std::size_t c = 0; c < d_head; ++c) out(b, t, h * d_head + c) = x(b, h, t, c);
    return out;
    // STUB
    // TODO(ex02): the inverse of split_heads: (B, H, N, d_head) back to (B, N, H * d_head), so that
    // merge_heads(split_heads(x, H)) gives x exactly (lesson 02, step 4).
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex02
