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
    // TODO(ex01): for every row (b, i), turn scores(b, i, :) into weights that are positive and
    // sum to 1: exp of each entry divided by the sum of the row's exps. Subtract the row's maximum
    // before exp() so that scores like 1e4 do not overflow (lesson 01, step 4).
    not_implemented_yet();
}

Tensor3 attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, Tensor3* weights) {
    // TODO(ex01): scores (B, N_q, N_k) = q . k^T, each divided by sqrt(d) where d = q.shape()[2]
    // (lesson 01, steps 3 and 6 show why sqrt(d)); weights = softmax_last_axis(scores);
    // out (B, N_q, d_v) = weights . v (step 5). If `weights` is not null, store them there too.
    not_implemented_yet();
}

}  // namespace headwise::ex01
