// Exercise 01 -- softmax and single-head scaled dot-product attention.
//
// Read lesson 01 first (./headwise run 1, lessons/01_single_head.cpp, docs/01_single_head.md).
// Grade with:  ./headwise grade 1    (or: ctest --preset grade -L ex01)
// Stuck? ./headwise hint 1 shows one hint at a time (exercises/01_single_head/HINTS.md).
//
// Tensors are headwise::Tensor3 = xt::xtensor<float, 3>: t.shape()[0] is its first size,
// t(b, i, j) reads or writes one element, Tensor3::from_shape({B, N, M}) makes a new one.
// Plain loops over t(b, i, j) are all you need (and keep re-grading fast).
#include "single_head.hpp"

#include <algorithm>
#include <cmath>

namespace headwise::ex01 {

Tensor3 softmax_last_axis(const Tensor3& scores) {
    // TODO(ex01): the softmax of every row scores(b, i, :): weights (B, N_q, N_k), each row positive
    // and summing to 1, and finite even for scores like 1e4 (lesson 01, step 4).
    not_implemented_yet();
}

Tensor3 attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, Tensor3* weights) {
    // TODO(ex01): single-head scaled dot-product attention of lesson 01 (steps 3 to 6): return the
    // output (B, N_q, d_v); when `weights` is not null, also store the weights (B, N_q, N_k) there.
    not_implemented_yet();
}

}  // namespace headwise::ex01
