#include "headwise/attention.hpp"
#include "headwise/limits.hpp"

#include "headwise/blas.hpp"
#include "headwise/fused_attention.hpp"
#include "headwise/parallel.hpp"
#include "headwise/softmax.hpp"

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace headwise {

using detail::linear_rows;

namespace {

// Scratch for MultiHeadAttention::forward's fast path, kept per thread from call to call and
// grown when needed: at the benchmark sizes it is 40-60 MB, and fresh pages on every call cost
// more than a tenth of the forward pass. Contents are garbage on entry.
float* workspace(std::size_t n) {
    thread_local std::vector<float> buf;
    if (buf.size() < n) {
        buf.clear();
        buf.shrink_to_fit();
        buf.resize(n);
    }
    return buf.data();
}

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

void check_rank_match(const Tensor4& q, const Tensor4& k, const Tensor4& v) {
    const auto& sq = q.shape();
    const auto& sk = k.shape();
    const auto& sv = v.shape();
    if (sq[0] != sk[0] || sq[1] != sk[1] || sq[3] != sk[3] || sk != sv) {
        throw usage_error(fmt::format("attention: q (B, H, N_q, d_head) = ({}, {}, {}, {}) does not fit k ({}, {}, {}, {}) "
                                      "and v ({}, {}, {}, {})",
                                      sq[0], sq[1], sq[2], sq[3], sk[0], sk[1], sk[2], sk[3], sv[0], sv[1], sv[2], sv[3]));
    }
}

// Is key j hidden from query i of batch b?
bool masked(const AttentionOptions& o, std::size_t b, std::size_t i, std::size_t j) {
    if (o.causal && j > i) return true;
    if (o.attn_mask != nullptr && (*o.attn_mask)(i, j)) return true;
    if (o.key_padding_mask != nullptr && (*o.key_padding_mask)(b, j)) return true;
    return false;
}

void check_masks(const AttentionOptions& o, std::size_t batch, std::size_t nq, std::size_t nk) {
    if (o.attn_mask != nullptr && (o.attn_mask->shape()[0] != nq || o.attn_mask->shape()[1] != nk)) {
        throw usage_error(fmt::format("attention: attn_mask must be (N_q, N_k) = ({}, {}), got ({}, {})", nq, nk,
                                      o.attn_mask->shape()[0], o.attn_mask->shape()[1]));
    }
    if (o.key_padding_mask != nullptr &&
        (o.key_padding_mask->shape()[0] != batch || o.key_padding_mask->shape()[1] != nk)) {
        throw usage_error(fmt::format("attention: key_padding_mask must be (B, N_k) = ({}, {}), got ({}, {})", batch, nk,
                                      o.key_padding_mask->shape()[0], o.key_padding_mask->shape()[1]));
    }
}

}  // namespace

Tensor3 linear(const Tensor3& x, const Tensor2& w, const Tensor1& b) {
    const std::size_t in = x.shape()[2];
    const std::size_t out = w.shape()[0];
    if (w.shape()[1] != in) {
        throw usage_error(fmt::format("linear: weight is ({}, {}) but the input has {} features", out, w.shape()[1], in));
    }
    if (b.size() != 0 && b.size() != out) {
        throw usage_error(fmt::format("linear: bias has {} entries, expected {}", b.size(), out));
    }
    limits::charge_work(2.0 * double(x.shape()[0] * x.shape()[1]) * double(in) * double(out), "linear");
    Tensor3 y = Tensor3::from_shape({x.shape()[0], x.shape()[1], out});
    linear_rows(x.data(), x.shape()[0] * x.shape()[1], in, w.data(), out, b.size() ? b.data() : nullptr, y.data());
    return y;
}

Tensor4 split_heads(const Tensor3& x, std::size_t heads) {
    const std::size_t batch = x.shape()[0], n = x.shape()[1], d_model = x.shape()[2];
    if (heads == 0 || d_model % heads != 0) {
        throw usage_error(fmt::format("split_heads: d_model = {} is not divisible by heads = {}", d_model, heads));
    }
    const std::size_t d_head = d_model / heads;
    limits::charge_work(2.0 * double(x.size()), "split_heads");
    // (B, N, d_model) -> (B, N, H, d_head) -> (B, H, N, d_head)
    Tensor4 out = xt::transpose(xt::reshape_view(x, std::array<std::size_t, 4>{batch, n, heads, d_head}), {0, 2, 1, 3});
    return out;
}

Tensor3 merge_heads(const Tensor4& x) {
    const std::size_t batch = x.shape()[0], heads = x.shape()[1], n = x.shape()[2], d_head = x.shape()[3];
    limits::charge_work(4.0 * double(x.size()), "merge_heads");
    // (B, H, N, d_head) -> (B, N, H, d_head), made contiguous, -> (B, N, d_model)
    Tensor4 swapped = xt::transpose(x, {0, 2, 1, 3});
    Tensor3 out = xt::reshape_view(swapped, std::array<std::size_t, 3>{batch, n, heads * d_head});
    return out;
}

Mask2 causal_mask(std::size_t n) {
    Mask2 m = Mask2::from_shape({n, n});
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) m(i, j) = j > i;
    return m;
}

Tensor4 scaled_dot_product_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                                     const AttentionOptions& options, Tensor4* weights) {
    check_rank_match(q, k, v);
    const std::size_t batch = q.shape()[0], heads = q.shape()[1], nq = q.shape()[2], d_head = q.shape()[3];
    const std::size_t nk = k.shape()[2];
    check_masks(options, batch, nq, nk);
    const float scale = options.scale.value_or(1.0f / std::sqrt(static_cast<float>(d_head)));
    const bool any_mask = options.causal || options.attn_mask || options.key_padding_mask;
    // Two GEMMs of 2 * N_q * N_k * d_head each, and a softmax (~25 per weight), per (b, h).
    limits::charge_work(double(batch * heads) * double(nq * nk) * (4.0 * double(d_head) + 25.0), "attention");

    Tensor4 out = Tensor4::from_shape({batch, heads, nq, d_head});
    if (weights == nullptr) {  // nobody wants the (B, H, N_q, N_k) weights: never materialise them
        auto view = [&](auto* data, std::size_t n) {
            return detail::Strided<std::remove_pointer_t<decltype(data)>>{data, heads * n * d_head, n * d_head, d_head};
        };
        detail::fused_attention({batch, heads, nq, nk, d_head}, view(q.data(), nq), view(k.data(), nk),
                                view(v.data(), nk), view(out.data(), nq), scale, options);
        return out;
    }
    Tensor4 local;
    Tensor4& w = weights != nullptr ? *weights : local;
    w = Tensor4::from_shape({batch, heads, nq, nk});

    for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t h = 0; h < heads; ++h) {
            const float* qp = q.data() + (b * heads + h) * nq * d_head;
            const float* kp = k.data() + (b * heads + h) * nk * d_head;
            const float* vp = v.data() + (b * heads + h) * nk * d_head;
            float* sp = w.data() + (b * heads + h) * nq * nk;
            // scores (N_q, N_k) = q (N_q, d_head) . k^T (d_head, N_k) * scale
            blas::gemm(false, true, nq, nk, d_head, scale, qp, d_head, kp, d_head, 0.0f, sp, nk);
            if (any_mask) {
                for (std::size_t i = 0; i < nq; ++i)
                    for (std::size_t j = 0; j < nk; ++j)
                        if (masked(options, b, i, j)) sp[i * nk + j] = neg_inf;
            }
            softmax_rows(sp, nq, nk);
            // out (N_q, d_head) = weights (N_q, N_k) . v (N_k, d_head)
            blas::gemm(false, false, nq, d_head, nk, 1.0f, sp, nk, vp, d_head, 0.0f,
                       out.data() + (b * heads + h) * nq * d_head, d_head);
        }
    }
    return out;
}

Tensor4 attention_reference(const Tensor4& q, const Tensor4& k, const Tensor4& v, const AttentionOptions& options,
                            Tensor4* weights) {
    check_rank_match(q, k, v);
    const std::size_t batch = q.shape()[0], heads = q.shape()[1], nq = q.shape()[2], d_head = q.shape()[3];
    const std::size_t nk = k.shape()[2];
    check_masks(options, batch, nq, nk);
    const double scale = options.scale ? static_cast<double>(*options.scale) : 1.0 / std::sqrt(static_cast<double>(d_head));
    // Plain double loops run about ten times slower per operation than BLAS: charged as such.
    limits::charge_work(10.0 * double(batch * heads) * double(nq * nk) * (4.0 * double(d_head) + 25.0),
                        "attention_reference");

    Tensor4 out = Tensor4::from_shape({batch, heads, nq, d_head});
    if (weights != nullptr) *weights = Tensor4::from_shape({batch, heads, nq, nk});
    // Plain pointers into each (b, h) block: the same arithmetic as indexing q(b, h, i, c), but
    // cheap in unoptimised (Debug + ASan) builds, where the tests call this oracle a lot.
    std::vector<double> s(nk);
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads; ++h) {
            const float* qh = q.data() + (b * heads + h) * nq * d_head;  // (N_q, d_head)
            const float* kh = k.data() + (b * heads + h) * nk * d_head;  // (N_k, d_head)
            const float* vh = v.data() + (b * heads + h) * nk * d_head;  // (N_k, d_head)
            float* oh = out.data() + (b * heads + h) * nq * d_head;      // (N_q, d_head)
            for (std::size_t i = 0; i < nq; ++i) {
                double m = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < nk; ++j) {
                    double dot = 0.0;
                    for (std::size_t c = 0; c < d_head; ++c) dot += double(qh[i * d_head + c]) * double(kh[j * d_head + c]);
                    s[j] = masked(options, b, i, j) ? -std::numeric_limits<double>::infinity() : dot * scale;
                    m = std::max(m, s[j]);
                }
                double sum = 0.0;
                for (std::size_t j = 0; j < nk; ++j) {
                    s[j] = std::isinf(m) ? 0.0 : std::exp(s[j] - m);  // fully masked row -> zeros
                    sum += s[j];
                }
                for (std::size_t j = 0; j < nk; ++j) s[j] = sum > 0.0 ? s[j] / sum : 0.0;
                for (std::size_t c = 0; c < d_head; ++c) {
                    double acc = 0.0;
                    for (std::size_t j = 0; j < nk; ++j) acc += s[j] * double(vh[j * d_head + c]);
                    oh[i * d_head + c] = static_cast<float>(acc);
                }
                if (weights != nullptr) {
                    float* wh = weights->data() + ((b * heads + h) * nq + i) * nk;
                    for (std::size_t j = 0; j < nk; ++j) wh[j] = static_cast<float>(s[j]);
                }
            }
        }
    return out;
}

MultiHeadAttention MultiHeadAttention::random(std::size_t d_model, std::size_t heads, bool bias, Random& rng) {
    MultiHeadAttention m;
    m.heads = heads;
    m.in_proj_weight = rng.linear_weight(3 * d_model, d_model);
    m.out_proj_weight = rng.linear_weight(d_model, d_model);
    if (bias) {
        m.in_proj_bias = rng.uniform<1>({3 * d_model}, -0.1f, 0.1f);
        m.out_proj_bias = rng.uniform<1>({d_model}, -0.1f, 0.1f);
    }
    m.validate();
    return m;
}

void MultiHeadAttention::validate() const {
    const std::size_t d = out_proj_weight.shape()[0];
    if (heads == 0 || d == 0 || d % heads != 0) {
        throw usage_error(fmt::format("multi-head attention: d_model = {} is not divisible by heads = {}", d, heads));
    }
    if (out_proj_weight.shape()[1] != d) {
        throw usage_error(fmt::format("out_proj_weight must be (d_model, d_model), got ({}, {})", d, out_proj_weight.shape()[1]));
    }
    if (in_proj_weight.shape()[0] != 3 * d || in_proj_weight.shape()[1] != d) {
        throw usage_error(fmt::format("in_proj_weight must be (3 * d_model, d_model) = ({}, {}), got ({}, {})", 3 * d, d,
                                      in_proj_weight.shape()[0], in_proj_weight.shape()[1]));
    }
    if (in_proj_bias.size() != 0 && in_proj_bias.size() != 3 * d) {
        throw usage_error(fmt::format("in_proj_bias must have 3 * d_model = {} entries, got {}", 3 * d, in_proj_bias.size()));
    }
    if (out_proj_bias.size() != 0 && out_proj_bias.size() != d) {
        throw usage_error(fmt::format("out_proj_bias must have d_model = {} entries, got {}", d, out_proj_bias.size()));
    }
}

Tensor3 MultiHeadAttention::forward(const Tensor3& query, const Tensor3& key, const Tensor3& value,
                                    const AttentionOptions& options, Tensor4* weights) const {
    validate();
    const std::size_t d = d_model();
    for (const Tensor3* t : {&query, &key, &value}) {
        if (t->shape()[2] != d) {
            throw usage_error(fmt::format("multi-head attention: inputs must have d_model = {} features, got {}", d,
                                          t->shape()[2]));
        }
    }
    if (key.shape() != value.shape()) {
        throw usage_error(fmt::format("multi-head attention: key ({}, {}, {}) and value ({}, {}, {}) must match",
                                      key.shape()[0], key.shape()[1], key.shape()[2], value.shape()[0],
                                      value.shape()[1], value.shape()[2]));
    }
    if (query.shape()[0] != key.shape()[0]) {
        throw usage_error(fmt::format("multi-head attention: query batch {} differs from key batch {}", query.shape()[0],
                                      key.shape()[0]));
    }
    const float* bias = in_proj_bias.size() ? in_proj_bias.data() : nullptr;
    // Four projections; the attention charges itself (the fused path below charges the same).
    const double rows_q = double(query.shape()[0] * query.shape()[1]), rows_k = double(key.shape()[0] * key.shape()[1]);
    limits::charge_work(2.0 * double(d) * double(d) * (2.0 * rows_q + 2.0 * rows_k), "multi-head projections");
    if (weights == nullptr) {
        limits::charge_work(double(query.shape()[0] * heads) * double(query.shape()[1] * key.shape()[1]) *
                                (4.0 * double(d / heads) + 25.0),
                            "attention");
        return forward_fused(query, key, value, options);
    }

    auto project = [&](const Tensor3& x, std::size_t which) {
        // rows [which * d, (which + 1) * d) of in_proj_weight are W_q, W_k or W_v
        Tensor3 y = Tensor3::from_shape({x.shape()[0], x.shape()[1], d});
        linear_rows(x.data(), x.shape()[0] * x.shape()[1], d, in_proj_weight.data() + which * d * d, d,
                    bias ? bias + which * d : nullptr, y.data());
        return split_heads(y, heads);
    };
    const Tensor4 q = project(query, 0);  // (B, H, N_q, d_head)
    const Tensor4 k = project(key, 1);    // (B, H, N_k, d_head)
    const Tensor4 v = project(value, 2);  // (B, H, N_k, d_head)
    const Tensor4 heads_out = scaled_dot_product_attention(q, k, v, options, weights);  // (B, H, N_q, d_head)
    return linear(merge_heads(heads_out), out_proj_weight, out_proj_bias);             // (B, N_q, d_model)
}

Tensor3 MultiHeadAttention::forward_fused(const Tensor3& query, const Tensor3& key, const Tensor3& value,
                                          const AttentionOptions& options) const {
    const std::size_t d = d_model(), batch = query.shape()[0], nq = query.shape()[1], nk = key.shape()[1];
    const std::size_t d_head = d / heads;
    check_masks(options, batch, nq, nk);
    const float* w = in_proj_weight.data();
    const float* bias = in_proj_bias.size() ? in_proj_bias.data() : nullptr;
    auto bias_at = [&](std::size_t which) { return bias ? bias + which * d : nullptr; };

    // Projections straight into row-major (B * N, k * d) buffers; the heads are never copied
    // out: head h of q is columns h * d_head ... of each row, read in place through strides.
    // All scratch lives in one per-thread workspace (see workspace()).
    const bool self = query.data() == key.data() && key.data() == value.data() && query.shape() == key.shape();
    const std::size_t q_size = batch * nq * (self ? 3 * d : d), kv_size = self ? 0 : batch * nk * 2 * d;
    const std::size_t tmp_size = !self && key.data() != value.data() ? batch * nk * d : 0;
    float* const q_buf = workspace(q_size + kv_size + tmp_size + batch * nq * d);
    float* const kv_buf = q_buf + q_size;
    float* const tmp = kv_buf + kv_size;
    float* const merged = tmp + tmp_size;  // (B, N_q, d_model)
    const float *qp = q_buf, *kp, *vp;
    std::size_t q_ld, k_ld;
    if (self) {  // one GEMM: x (B*N, d) . [W_q; W_k; W_v]^T (d, 3d)
        linear_rows(query.data(), batch * nq, d, w, 3 * d, bias, q_buf);
        kp = qp + d;
        vp = qp + 2 * d;
        q_ld = k_ld = 3 * d;
    } else {
        linear_rows(query.data(), batch * nq, d, w, d, bias_at(0), q_buf);
        q_ld = d;
        if (key.data() == value.data()) {  // one GEMM for K and V: rows d..3d of in_proj_weight
            linear_rows(key.data(), batch * nk, d, w + d * d, 2 * d, bias_at(1), kv_buf);
        } else {  // two GEMMs into the two halves of each row
            for (std::size_t which : {1u, 2u}) {
                linear_rows((which == 1 ? key : value).data(), batch * nk, d, w + which * d * d, d, bias_at(which), tmp);
                for (std::size_t r = 0; r < batch * nk; ++r)
                    std::copy(tmp + r * d, tmp + (r + 1) * d, kv_buf + r * 2 * d + (which - 1) * d);
            }
        }
        kp = kv_buf;
        vp = kp + d;
        k_ld = 2 * d;
    }

    // merged: each head writes its d_head columns, so no merge step is needed.
    const float scale = options.scale.value_or(1.0f / std::sqrt(static_cast<float>(d_head)));
    detail::fused_attention({batch, heads, nq, nk, d_head}, {qp, nq * q_ld, d_head, q_ld}, {kp, nk * k_ld, d_head, k_ld},
                            {vp, nk * k_ld, d_head, k_ld}, {merged, nq * d, d_head, d}, scale, options);

    Tensor3 out = Tensor3::from_shape({batch, nq, d});
    linear_rows(merged, batch * nq, d, out_proj_weight.data(), d,
                out_proj_bias.size() ? out_proj_bias.data() : nullptr, out.data());
    return out;
}

}  // namespace headwise
