#include "headwise/reference/attention.hpp"
#include "headwise/base/limits.hpp"

#include "headwise/fast/blas.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/huge_pages.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/reference/softmax.hpp"

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace headwise {

using fast::linear_rows;
using sdpa::check_rank_match;
using sdpa::masked;

namespace {

// Scratch for MultiHeadAttention::forward's fast path, kept per thread from call to call and
// grown when needed: at the benchmark sizes it is 32-48 MB, and fresh pages on every call cost
// more than a tenth of the forward pass. Contents are garbage on entry.
float* workspace(std::size_t n) { return fast::thread_workspace(n, 0); }

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

}  // namespace

void sdpa::check_rank_match(const Tensor4& q, const Tensor4& k, const Tensor4& v) {
    const auto& sq = q.shape();
    const auto& sk = k.shape();
    const auto& sv = v.shape();
    if (sq[0] != sk[0] || sq[1] != sk[1] || sq[3] != sk[3] || sk != sv) {
        throw usage_error(
            fmt::format("attention: q (B, H, N_q, d_head) = ({}, {}, {}, {}) does not fit k ({}, {}, {}, {}) "
                        "and v ({}, {}, {}, {})",
                        sq[0], sq[1], sq[2], sq[3], sk[0], sk[1], sk[2], sk[3], sv[0], sv[1], sv[2], sv[3]));
    }
}

bool sdpa::masked(const AttentionOptions& o, std::size_t b, std::size_t i, std::size_t j) {
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
        throw usage_error(fmt::format("attention: key_padding_mask must be (B, N_k) = ({}, {}), got ({}, {})", batch,
                                      nk, o.key_padding_mask->shape()[0], o.key_padding_mask->shape()[1]));
    }
}

Tensor3 linear(const Tensor3& x, const Tensor2& w, const Tensor1& b) {
    const std::size_t in = x.shape()[2];
    const std::size_t out = w.shape()[0];
    if (w.shape()[1] != in) {
        throw usage_error(
            fmt::format("linear: weight is ({}, {}) but the input has {} features", out, w.shape()[1], in));
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
        auto view = [&](auto* data, std::size_t n) { return fast::contiguous_heads(data, heads, n, d_head); };
        fast::fused_attention({batch, heads, nq, nk, d_head}, view(q.data(), nq), view(k.data(), nk),
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
    const double scale =
        options.scale ? static_cast<double>(*options.scale) : 1.0 / std::sqrt(static_cast<double>(d_head));
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
                    for (std::size_t c = 0; c < d_head; ++c)
                        dot += double(qh[i * d_head + c]) * double(kh[j * d_head + c]);
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
        throw usage_error(
            fmt::format("out_proj_weight must be (d_model, d_model), got ({}, {})", d, out_proj_weight.shape()[1]));
    }
    if (in_proj_weight.shape()[0] != 3 * d || in_proj_weight.shape()[1] != d) {
        throw usage_error(fmt::format("in_proj_weight must be (3 * d_model, d_model) = ({}, {}), got ({}, {})", 3 * d,
                                      d, in_proj_weight.shape()[0], in_proj_weight.shape()[1]));
    }
    if (in_proj_bias.size() != 0 && in_proj_bias.size() != 3 * d) {
        throw usage_error(
            fmt::format("in_proj_bias must have 3 * d_model = {} entries, got {}", 3 * d, in_proj_bias.size()));
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
            throw usage_error(
                fmt::format("multi-head attention: inputs must have d_model = {} features, got {}", d, t->shape()[2]));
        }
    }
    if (key.shape() != value.shape()) {
        throw usage_error(fmt::format("multi-head attention: key ({}, {}, {}) and value ({}, {}, {}) must match",
                                      key.shape()[0], key.shape()[1], key.shape()[2], value.shape()[0],
                                      value.shape()[1], value.shape()[2]));
    }
    if (query.shape()[0] != key.shape()[0]) {
        throw usage_error(fmt::format("multi-head attention: query batch {} differs from key batch {}",
                                      query.shape()[0], key.shape()[0]));
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
    const Tensor4 q = project(query, 0);                                                // (B, H, N_q, d_head)
    const Tensor4 k = project(key, 1);                                                  // (B, H, N_k, d_head)
    const Tensor4 v = project(value, 2);                                                // (B, H, N_k, d_head)
    const Tensor4 heads_out = scaled_dot_product_attention(q, k, v, options, weights);  // (B, H, N_q, d_head)
    return linear(merge_heads(heads_out), out_proj_weight, out_proj_bias);              // (B, N_q, d_model)
}

namespace {

// The fast path's working memory is capped at this many bytes whatever N is (at most
// 64 MiB beyond inputs and outputs at (1, 16384, 1024, 16), where Q, K and V alone are 192 MiB).
// Up to the cap, the whole batch and every head go at once: the biggest GEMMs, the fastest path.
constexpr std::size_t default_fused_budget_bytes = 64u << 20;
std::size_t fused_budget_bytes = default_fused_budget_bytes;

// How the fast path splits its work: `batch_chunk` batch elements and `head_group` heads at a
// time, each chunk projected, attended and folded into the output before the next one starts.
struct FusedPlan {
    std::size_t batch_chunk = 1, head_group = 1;
    std::size_t floats = 0;  // the workspace that needs
};

// Floats for bb batch elements and g heads: Q, K, V of those heads and their merged output (with
// every head of a self-attention, one (B * N, 3 * d_model) buffer and the merged heads), and the
// K^T that the attention's micro-kernels pack (fused_attention_scratch_bytes counts it).
std::size_t fused_floats(std::size_t bb, std::size_t g, std::size_t d_head, std::size_t nq, std::size_t nk) {
    return bb * (2 * nq + 2 * nk) * g * d_head +
           fast::fused_attention_scratch_bytes({bb, g, nq, nk, d_head}) / sizeof(float);
}

FusedPlan plan_fused(std::size_t batch, std::size_t heads, std::size_t d_head, std::size_t nq, std::size_t nk) {
    const std::size_t budget = fused_budget_bytes / sizeof(float);
    // Every head: as many batch elements at a time as fit (all of them at the usual sizes).
    const std::size_t one = fused_floats(1, heads, d_head, nq, nk);
    if (one == 0) return {std::max<std::size_t>(batch, 1), heads, 0};  // empty sequences: nothing to hold
    if (one <= budget) {
        const std::size_t bb = std::min(batch, budget / one);
        return {bb, heads, fused_floats(bb, heads, d_head, nq, nk)};
    }
    // One batch element, the most heads that fit (a divisor of H, so groups are equal); one head
    // at the least, whose O(N * d_head) is what attention over N keys needs anyway.
    std::size_t g = heads;
    while (g > 1 && (heads % g != 0 || fused_floats(1, g, d_head, nq, nk) > budget)) --g;
    return {1, g, fused_floats(1, g, d_head, nq, nk)};
}

}  // namespace

void sdpa::set_fused_budget(std::size_t bytes) { fused_budget_bytes = bytes != 0 ? bytes : default_fused_budget_bytes; }

std::size_t MultiHeadAttention::forward_scratch_bytes(std::size_t batch, std::size_t nq, std::size_t nk,
                                                      bool with_weights) const {
    const std::size_t d = d_model(), d_head = d / heads;
    if (with_weights) {
        // The (B, H, N_q, N_k) weights, plus Q, K, V, their per-head copies, the heads' outputs
        // and their merged copy (each at most (B, max(N_q, N_k), d_model)).
        const std::size_t n = std::max(nq, nk);
        return (batch * heads * nq * nk + 8 * batch * n * d) * sizeof(float);
    }
    return plan_fused(batch, heads, d_head, nq, nk).floats * sizeof(float);
}

Tensor3 MultiHeadAttention::forward_fused(const Tensor3& query, const Tensor3& key, const Tensor3& value,
                                          const AttentionOptions& options) const {
    const std::size_t d = d_model(), batch = query.shape()[0], nq = query.shape()[1], nk = key.shape()[1];
    const std::size_t d_head = d / heads;
    check_masks(options, batch, nq, nk);
    const float* w = in_proj_weight.data();
    const float* bias = in_proj_bias.size() ? in_proj_bias.data() : nullptr;
    const float* out_bias = out_proj_bias.size() ? out_proj_bias.data() : nullptr;
    const float scale = options.scale.value_or(1.0f / std::sqrt(static_cast<float>(d_head)));
    const bool self = query.data() == key.data() && key.data() == value.data() && query.shape() == key.shape();

    const FusedPlan plan = plan_fused(batch, heads, d_head, nq, nk);
    // Q, K, V and the merged heads of one chunk (the attention's own scratch is its business).
    float* const buf = workspace(plan.batch_chunk * (2 * nq + 2 * nk) * plan.head_group * d_head);
    Tensor3 out = Tensor3::from_shape({batch, nq, d});  // (B, N_q, d_model)
    prefer_huge_pages(out.data(), out.size() * sizeof(float));
    // The key padding mask is (B, N_k): each batch chunk sees its own rows through a shifted copy.
    for (std::size_t b0 = 0; b0 < batch; b0 += plan.batch_chunk) {
        const std::size_t bb = std::min(plan.batch_chunk, batch - b0);
        Mask2 chunk_padding;
        AttentionOptions o = options;
        if (options.key_padding_mask != nullptr && (b0 != 0 || bb != batch)) {
            chunk_padding = xt::view(*options.key_padding_mask, xt::range(b0, b0 + bb), xt::all());
            o.key_padding_mask = &chunk_padding;
        }
        const float* xq = query.data() + b0 * nq * d;
        const float* xk = key.data() + b0 * nk * d;
        const float* xv = value.data() + b0 * nk * d;
        for (std::size_t h0 = 0; h0 < heads; h0 += plan.head_group) {
            const std::size_t g = plan.head_group, cols = g * d_head, c0 = h0 * d_head;  // columns [c0, c0 + cols)
            // Projections straight into row-major buffers; head h is d_head columns of each row,
            // read in place through strides, so heads are never copied out or merged back.
            const float *qp, *kp, *vp;
            std::size_t q_ld, k_ld;
            float* merged;             // (bb * N_q, cols): each head writes its own d_head columns
            if (self && g == heads) {  // one GEMM: x (bb*N, d) . [W_q; W_k; W_v]^T (d, 3d)
                linear_rows(xq, bb * nq, d, w, 3 * d, bias, buf);
                qp = buf;
                kp = buf + d;
                vp = buf + 2 * d;
                q_ld = k_ld = 3 * d;
                merged = buf + bb * nq * 3 * d;
            } else {  // rows [which * d + c0, ... + cols) of in_proj_weight: this group's W_q, W_k, W_v
                float* const q_buf = buf;
                float* const k_buf = q_buf + bb * nq * cols;
                float* const v_buf = k_buf + bb * nk * cols;
                merged = v_buf + bb * nk * cols;
                auto project = [&](const float* x, std::size_t rows, std::size_t which, float* y) {
                    fast::linear_rows(x, rows, d, d, w + (which * d + c0) * d, d, cols,
                                      bias ? bias + which * d + c0 : nullptr, false, y, cols);
                };
                project(xq, bb * nq, 0, q_buf);
                project(xk, bb * nk, 1, k_buf);
                project(xv, bb * nk, 2, v_buf);
                qp = q_buf;
                kp = k_buf;
                vp = v_buf;
                q_ld = k_ld = cols;
            }
            fast::fused_attention({bb, g, nq, nk, d_head}, {qp, nq * q_ld, d_head, q_ld}, {kp, nk * k_ld, d_head, k_ld},
                                  {vp, nk * k_ld, d_head, k_ld}, {merged, nq * cols, d_head, cols}, scale, o);
            // out (+)= merged (bb * N_q, cols) . W_o[:, c0 : c0 + cols]^T (+ out_proj_bias, once)
            fast::linear_rows(merged, bb * nq, cols, cols, out_proj_weight.data() + c0, d, d, out_bias, h0 != 0,
                              out.data() + b0 * nq * d, d);
        }
    }
    return out;
}

}  // namespace headwise
