#include "headwise/reference/attention_backward.hpp"

#include "headwise/base/limits.hpp"
#include "headwise/fast/fused_backward.hpp"
#include "headwise/reference/attention.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace headwise {

namespace {

// Throws usage_error unless q, k, v fit each other, d_out has q's shape and the masks fit.
void check_backward_shapes(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Tensor4& d_out,
                           const AttentionOptions& options) {
    sdpa::check_rank_match(q, k, v);
    if (d_out.shape() != q.shape()) {
        const auto& s = q.shape();
        const auto& g = d_out.shape();
        throw usage_error(fmt::format(
            "attention backward: d_out must have the output's shape (B, H, N_q, d_head) = ({}, {}, {}, {}), got "
            "({}, {}, {}, {})",
            s[0], s[1], s[2], s[3], g[0], g[1], g[2], g[3]));
    }
    check_masks(options, q.shape()[0], q.shape()[2], k.shape()[2]);
}

// One (batch, head) in double: q, d_out (N_q, d_head); k, v (N_k, d_head); dk, dv accumulate.
struct HeadBackward {
    std::size_t b, nq, nk, d_head;
    double scale;
    const AttentionOptions& options;
    const float* bias;  // (N_q, N_k) of this head, or null

    // Row i's weights p (N_k) = softmax(scale * q_i . k^T + mask); all zero if every key is masked.
    void weights(const float* qi, const float* k, std::size_t i, std::vector<double>& p) const {
        constexpr double neg_inf = -std::numeric_limits<double>::infinity();
        double m = neg_inf;
        for (std::size_t j = 0; j < nk; ++j) {
            double dot = 0.0;
            for (std::size_t c = 0; c < d_head; ++c) dot += double(qi[c]) * double(k[j * d_head + c]);
            const double add = bias != nullptr ? double(bias[i * nk + j]) : 0.0;
            p[j] = sdpa::masked(options, b, i, j) ? neg_inf : dot * scale + add;
            m = std::max(m, p[j]);
        }
        double sum = 0.0;
        for (std::size_t j = 0; j < nk; ++j) {
            p[j] = std::isinf(m) ? 0.0 : std::exp(p[j] - m);
            sum += p[j];
        }
        for (std::size_t j = 0; j < nk; ++j) p[j] = sum > 0.0 ? p[j] / sum : 0.0;
    }

    void run(const float* q, const float* k, const float* v, const float* d_out, double* dq, double* dk,
             double* dv) const {
        std::vector<double> p(nk), dp(nk);
        for (std::size_t i = 0; i < nq; ++i) {
            const float* qi = q + i * d_head;
            const float* doi = d_out + i * d_head;
            weights(qi, k, i, p);
            // dv_j += P_ij d_out_i;  dP_ij = d_out_i . v_j;  delta_i = sum_j P_ij dP_ij
            double delta = 0.0;
            for (std::size_t j = 0; j < nk; ++j) {
                double dot = 0.0;
                for (std::size_t c = 0; c < d_head; ++c) {
                    dv[j * d_head + c] += p[j] * double(doi[c]);
                    dot += double(doi[c]) * double(v[j * d_head + c]);
                }
                dp[j] = dot;
                delta += p[j] * dot;
            }
            // dS_ij = P_ij (dP_ij - delta_i);  dq_i += scale dS_ij k_j;  dk_j += scale dS_ij q_i
            for (std::size_t j = 0; j < nk; ++j) {
                const double ds = p[j] * (dp[j] - delta) * scale;
                if (ds == 0.0) continue;
                for (std::size_t c = 0; c < d_head; ++c) {
                    dq[i * d_head + c] += ds * double(k[j * d_head + c]);
                    dk[j * d_head + c] += ds * double(qi[c]);
                }
            }
        }
    }
};

}  // namespace

AttentionGrads attention_backward_reference(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Tensor4& d_out,
                                            const AttentionOptions& options, const Tensor3* bias) {
    check_backward_shapes(q, k, v, d_out, options);
    if (bias != nullptr &&
        (bias->shape()[0] != q.shape()[1] || bias->shape()[1] != q.shape()[2] || bias->shape()[2] != k.shape()[2])) {
        throw usage_error(fmt::format("attention backward: bias must be (H, N_q, N_k) = ({}, {}, {}), got ({}, {}, {})",
                                      q.shape()[1], q.shape()[2], k.shape()[2], bias->shape()[0], bias->shape()[1],
                                      bias->shape()[2]));
    }
    const std::size_t batch = q.shape()[0], heads = q.shape()[1], nq = q.shape()[2], d_head = q.shape()[3];
    const std::size_t nk = k.shape()[2];
    const double scale =
        options.scale ? static_cast<double>(*options.scale) : 1.0 / std::sqrt(static_cast<double>(d_head));
    // Five products of N_q * N_k * d_head multiply-adds per (b, h), in plain double loops (~10x BLAS).
    limits::charge_work(10.0 * double(batch * heads) * double(nq * nk) * (10.0 * double(d_head) + 25.0),
                        "attention_backward_reference");

    AttentionGrads g{Tensor4::from_shape(q.shape()), Tensor4::from_shape(k.shape()), Tensor4::from_shape(v.shape())};
    std::vector<double> dq(nq * d_head), dk(nk * d_head), dv(nk * d_head);
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads; ++h) {
            const std::size_t bh = b * heads + h;
            std::fill(dq.begin(), dq.end(), 0.0);
            std::fill(dk.begin(), dk.end(), 0.0);
            std::fill(dv.begin(), dv.end(), 0.0);
            const HeadBackward head{
                b, nq, nk, d_head, scale, options, bias != nullptr ? bias->data() + h * nq * nk : nullptr};
            head.run(q.data() + bh * nq * d_head, k.data() + bh * nk * d_head, v.data() + bh * nk * d_head,
                     d_out.data() + bh * nq * d_head, dq.data(), dk.data(), dv.data());
            std::copy(dq.begin(), dq.end(), g.dq.data() + bh * nq * d_head);
            std::copy(dk.begin(), dk.end(), g.dk.data() + bh * nk * d_head);
            std::copy(dv.begin(), dv.end(), g.dv.data() + bh * nk * d_head);
        }
    return g;
}

AttentionGrads scaled_dot_product_attention_backward(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                                                     const Tensor4& d_out, const AttentionOptions& options) {
    check_backward_shapes(q, k, v, d_out, options);
    const std::size_t batch = q.shape()[0], heads = q.shape()[1], nq = q.shape()[2], d_head = q.shape()[3];
    const std::size_t nk = k.shape()[2];
    const float scale = options.scale.value_or(1.0f / std::sqrt(static_cast<float>(d_head)));
    // The forward again (two products) for its output and log-sum-exp, then five products.
    limits::charge_work(double(batch * heads) * double(nq * nk) * (14.0 * double(d_head) + 50.0), "attention backward");
    auto view = [&](auto* data, std::size_t n) { return fast::contiguous_heads(data, heads, n, d_head); };
    const fast::AttentionShape shape{batch, heads, nq, nk, d_head};
    Tensor4 out = Tensor4::from_shape(q.shape());  // (B, H, N_q, d_head)
    std::vector<float> lse(batch * heads * nq);    // (B, H, N_q)
    fast::fused_attention(shape, view(q.data(), nq), view(k.data(), nk), view(v.data(), nk), view(out.data(), nq),
                          scale, options, {}, lse.data());
    AttentionGrads g{Tensor4::from_shape(q.shape()), Tensor4::from_shape(k.shape()), Tensor4::from_shape(v.shape())};
    fast::fused_attention_backward(shape, view(q.data(), nq), view(k.data(), nk), view(v.data(), nk),
                                   view(std::as_const(out).data(), nq), view(d_out.data(), nq), lse.data(),
                                   view(g.dq.data(), nq), view(g.dk.data(), nk), view(g.dv.data(), nk), scale, options);
    return g;
}

}  // namespace headwise
