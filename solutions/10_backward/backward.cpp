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
    // BEGIN SOLUTION
    const std::size_t n = p.size();
    float d = 0.0f;  // rowsum(dp * p): the p p^T part of the Jacobian, one number for the row
    for (std::size_t j = 0; j < n; ++j) d += dp(j) * p(j);
    Tensor1 ds = Tensor1::from_shape({n});  // (N)
    for (std::size_t j = 0; j < n; ++j) ds(j) = p(j) * (dp(j) - d);
    return ds;
    // STUB
    // TODO(ex10): ds = J^T dp with J = diag(p) - p p^T, the softmax's Jacobian -- without building
    // the N x N matrix J (lesson 10, step 4).
    not_implemented_yet();
    // END SOLUTION
}

AttentionGrads attention_backward(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Tensor4& d_out,
                                  bool causal, const Mask2& key_padding_mask) {
    // BEGIN SOLUTION
    const std::size_t batch = q.shape()[0], heads = q.shape()[1], n = q.shape()[2], d_head = q.shape()[3];
    const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const std::array<std::size_t, 4> shape{batch, heads, n, d_head};
    AttentionGrads g{xt::zeros<float>(shape), xt::zeros<float>(shape), xt::zeros<float>(shape)};
    std::vector<float> p(n), dp(n);  // one row of P and of dP
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t i = 0; i < n; ++i) {
                // Row i of P, recomputed as the forward made it: -inf for a hidden key, stable softmax.
                float m = neg_inf;
                for (std::size_t j = 0; j < n; ++j) {
                    const bool hidden = (causal && j > i) || (key_padding_mask.size() != 0 && key_padding_mask(b, j));
                    float dot = 0.0f;
                    for (std::size_t c = 0; c < d_head; ++c) dot += q(b, h, i, c) * k(b, h, j, c);
                    p[j] = hidden ? neg_inf : dot * scale;
                    m = std::max(m, p[j]);
                }
                float sum = 0.0f;
                for (std::size_t j = 0; j < n; ++j) {
                    p[j] = m == neg_inf ? 0.0f : std::exp(p[j] - m);  // a query that sees nothing: 0, never NaN
                    sum += p[j];
                }
                for (std::size_t j = 0; j < n; ++j) p[j] = sum > 0.0f ? p[j] / sum : 0.0f;
                // Row i of dP = dO V^T, and D = rowsum(dP * P).
                float d = 0.0f;
                for (std::size_t j = 0; j < n; ++j) {
                    float acc = 0.0f;
                    for (std::size_t c = 0; c < d_head; ++c) acc += d_out(b, h, i, c) * v(b, h, j, c);
                    dp[j] = acc;
                    d += dp[j] * p[j];
                }
                for (std::size_t j = 0; j < n; ++j) {
                    const float ds = p[j] * (dp[j] - d);  // dS = P * (dP - D): 0 where P is 0
                    for (std::size_t c = 0; c < d_head; ++c) {
                        g.dv(b, h, j, c) += p[j] * d_out(b, h, i, c);    // dV = P^T dO
                        g.dq(b, h, i, c) += ds * k(b, h, j, c) * scale;  // dQ = dS K / sqrt(d)
                        g.dk(b, h, j, c) += ds * q(b, h, i, c) * scale;  // dK = dS^T Q / sqrt(d)
                    }
                }
            }
    return g;
    // STUB
    // TODO(ex10): for each (b, h) and query row i: recompute row i of the weights P as the forward
    // did (scores / sqrt(d_head), -inf for a hidden key, softmax; a query that sees no key: 0), then
    // dV += P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dP * P)), dQ = dS K / sqrt(d_head),
    // dK = dS^T Q / sqrt(d_head) (lesson 10, steps 2-7). Return zeros where no gradient flows.
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex10
