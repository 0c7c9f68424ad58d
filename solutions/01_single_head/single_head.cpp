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
    // BEGIN SOLUTION
    const std::size_t batch = scores.shape()[0], n_q = scores.shape()[1], n_k = scores.shape()[2];
    Tensor3 weights = Tensor3::from_shape({batch, n_q, n_k});  // (B, N_q, N_k)
    for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t i = 0; i < n_q; ++i) {
            // Subtracting the row's maximum changes nothing mathematically, but exp() of the
            // largest entry becomes exp(0) = 1 instead of overflowing to inf.
            float m = scores(b, i, 0);
            for (std::size_t j = 1; j < n_k; ++j) m = std::max(m, scores(b, i, j));
            float sum = 0.0f;
            for (std::size_t j = 0; j < n_k; ++j) {
                weights(b, i, j) = std::exp(scores(b, i, j) - m);
                sum += weights(b, i, j);
            }
            for (std::size_t j = 0; j < n_k; ++j) weights(b, i, j) /= sum;
        }
    }
    return weights;
    // STUB
    // TODO(ex01): the softmax of every row scores(b, i, :): weights (B, N_q, N_k), each row positive
    // and summing to 1, and finite even for scores like 1e4 (lesson 01, step 4).
    not_implemented_yet();
    // END SOLUTION
}

Tensor3 attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, Tensor3* weights) {
    // BEGIN SOLUTION
    const std::size_t batch = q.shape()[0], n_q = q.shape()[1], d = q.shape()[2];
    const std::size_t n_k = k.shape()[1], d_v = v.shape()[2];
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));

    // scores (B, N_q, N_k) = q (B, N_q, d) . k^T (B, d, N_k) / sqrt(d)
    Tensor3 scores = Tensor3::from_shape({batch, n_q, n_k});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t i = 0; i < n_q; ++i)
            for (std::size_t j = 0; j < n_k; ++j) {
                float dot = 0.0f;
                for (std::size_t c = 0; c < d; ++c) dot += q(b, i, c) * k(b, j, c);
                scores(b, i, j) = dot * scale;
            }

    const Tensor3 w = softmax_last_axis(scores);  // (B, N_q, N_k)

    // out (B, N_q, d_v) = w (B, N_q, N_k) . v (B, N_k, d_v)
    Tensor3 out = Tensor3::from_shape({batch, n_q, d_v});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t i = 0; i < n_q; ++i)
            for (std::size_t c = 0; c < d_v; ++c) {
                float acc = 0.0f;
                for (std::size_t j = 0; j < n_k; ++j) acc += w(b, i, j) * v(b, j, c);
                out(b, i, c) = acc;
            }
    if (weights != nullptr) *weights = w;
    return out;
    // STUB
    // TODO(ex01): single-head scaled dot-product attention of lesson 01 (steps 3 to 6): return the
    // output (B, N_q, d_v); when `weights` is not null, also store the weights (B, N_q, N_k) there.
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex01
