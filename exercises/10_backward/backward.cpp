// Exercise 10 -- the backward pass of attention.
//
// Read lesson 10 first (./headwise run 10, lessons/10_backward.cpp, docs/10_backward.md).
// Grade with:  ./headwise grade 10    (or: ctest --preset grade -L ex10)
// Stuck? ./headwise hint 10 shows one hint at a time (exercises/10_backward/HINTS.md).
//
// Tensor4::from_shape({B, H, N, d}) makes an uninitialised tensor, xt::zeros<float>(shape) a
// zeroed one; t(b, h, i, c) reads or writes an element. Mask2 m: m.size() == 0 means "no mask".
#include "backward.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace headwise::ex10 {

Tensor1 softmax_backward_row(const Tensor1& p, const Tensor1& dp) {
    // TODO(ex10): ds = J^T dp with J = diag(p) - p p^T, the softmax's Jacobian -- without building
    // the N x N matrix J (lesson 10, step 4).
    not_implemented_yet();
}

AttentionGrads attention_backward(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Tensor4& d_out,
                                  bool causal, const Mask2& key_padding_mask) {
    // TODO(ex10): for each (b, h) and query row i: recompute row i of the weights P as the forward
    // did (scores / sqrt(d_head), -inf for a hidden key, softmax; a query that sees no key: 0), then
    // dV += P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dP * P)), dQ = dS K / sqrt(d_head),
    // dK = dS^T Q / sqrt(d_head) (lesson 10, steps 2-7). Return zeros where no gradient flows.
    not_implemented_yet();
}

}  // namespace headwise::ex10
