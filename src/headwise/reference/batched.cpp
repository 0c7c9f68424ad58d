#include "headwise/reference/batched.hpp"
#include "headwise/base/limits.hpp"

#include "headwise/fast/blas.hpp"

#include <fmt/format.h>

namespace headwise {

Tensor4 attention_scores(const Tensor4& q, const Tensor4& k, float scale) {
    const std::size_t batch = q.shape()[0], heads = q.shape()[1], nq = q.shape()[2], d_head = q.shape()[3];
    const std::size_t nk = k.shape()[2];
    if (k.shape()[0] != batch || k.shape()[1] != heads || k.shape()[3] != d_head) {
        throw usage_error(
            fmt::format("attention_scores: q ({}, {}, {}, {}) and k ({}, {}, {}, {}) differ in B, H or d_head", batch,
                        heads, nq, d_head, k.shape()[0], k.shape()[1], nk, k.shape()[3]));
    }
    limits::charge_work(2.0 * double(batch * heads) * double(nq * nk) * double(d_head), "attention scores");
    Tensor4 s = Tensor4::from_shape({batch, heads, nq, nk});
    for (std::size_t bh = 0; bh < batch * heads; ++bh) {
        blas::gemm(false, true, nq, nk, d_head, scale, q.data() + bh * nq * d_head, d_head, k.data() + bh * nk * d_head,
                   d_head, 0.0f, s.data() + bh * nq * nk, nk);
    }
    return s;
}

Tensor4 apply_weights(const Tensor4& weights, const Tensor4& v) {
    const std::size_t batch = v.shape()[0], heads = v.shape()[1], nk = v.shape()[2], d_head = v.shape()[3];
    const std::size_t nq = weights.shape()[2];
    if (weights.shape()[0] != batch || weights.shape()[1] != heads || weights.shape()[3] != nk) {
        throw usage_error(fmt::format("apply_weights: weights ({}, {}, {}, {}) do not fit v ({}, {}, {}, {})",
                                      weights.shape()[0], weights.shape()[1], nq, weights.shape()[3], batch, heads, nk,
                                      d_head));
    }
    limits::charge_work(2.0 * double(batch * heads) * double(nq * nk) * double(d_head), "weights . v");
    Tensor4 out = Tensor4::from_shape({batch, heads, nq, d_head});
    for (std::size_t bh = 0; bh < batch * heads; ++bh) {
        blas::gemm(false, false, nq, d_head, nk, 1.0f, weights.data() + bh * nq * nk, nk, v.data() + bh * nk * d_head,
                   d_head, 0.0f, out.data() + bh * nq * d_head, d_head);
    }
    return out;
}

}  // namespace headwise
