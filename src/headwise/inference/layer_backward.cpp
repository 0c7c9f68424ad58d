#include "headwise/inference/layer_backward.hpp"

#include "headwise/base/limits.hpp"
#include "headwise/fast/blas.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/fused_backward.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/reference/attention.hpp"
#include "headwise/reference/attention_backward.hpp"

#include <fmt/format.h>

#include <cmath>

namespace headwise {

namespace {

using detail::Strided;

// The sizes of one layer call, named as in the header.
struct Sizes {
    std::size_t batch, nq, nk, d_model, d_head, heads, kv_heads;
    std::size_t group() const { return heads / kv_heads; }
    std::size_t kv_width() const { return kv_heads * d_head; }
    detail::AttentionShape per_member() const { return {batch, kv_heads, nq, nk, d_head}; }
};

Sizes sizes_of(const GroupedQueryAttention& m, const Tensor3& query, const Tensor3& key, const Tensor3& value) {
    m.validate();
    const std::size_t d = m.d_model();
    for (const Tensor3* t : {&query, &key, &value})
        if (t->shape()[2] != d)
            throw usage_error(
                fmt::format("attention layer: inputs must have d_model = {} features, got {}", d, t->shape()[2]));
    if (key.shape() != value.shape() || query.shape()[0] != key.shape()[0])
        throw usage_error(
            fmt::format("attention layer: query ({}, {}, {}), key ({}, {}, {}) and value ({}, {}, {}) "
                        "do not fit",
                        query.shape()[0], query.shape()[1], query.shape()[2], key.shape()[0], key.shape()[1],
                        key.shape()[2], value.shape()[0], value.shape()[1], value.shape()[2]));
    return {query.shape()[0], query.shape()[1], key.shape()[1], d, m.d_head(), m.heads, m.kv_heads};
}

bool same_tensor(const Tensor3& a, const Tensor3& b) { return a.data() == b.data() && a.shape() == b.shape(); }

float scale_of(const AttentionOptions& o, std::size_t d_head) {
    return o.scale.value_or(1.0f / std::sqrt(static_cast<float>(d_head)));
}

// y (B, N, width) = x (B, N, d_model) . W[r0 .. r0 + width)^T + b[r0 .. r0 + width)
Tensor3 project(const GroupedQueryAttention& m, const Tensor3& x, std::size_t r0, std::size_t width) {
    const std::size_t d = m.d_model();
    Tensor3 y = Tensor3::from_shape({x.shape()[0], x.shape()[1], width});
    detail::linear_rows(x.data(), x.shape()[0] * x.shape()[1], d, m.in_proj_weight.data() + r0 * d, width,
                        m.in_proj_bias.size() ? m.in_proj_bias.data() + r0 : nullptr, y.data());
    return y;
}

// x (B, N, heads * d_head) rotated in place (or back, `inverse`), token t at position first + t.
void rope(Tensor3& x, std::size_t heads, std::size_t d_head, const PositionEncoding& p, bool inverse) {
    const std::size_t batch = x.shape()[0], n = x.shape()[1], width = x.shape()[2];
    std::vector<double> positions(n);
    for (std::size_t t = 0; t < n; ++t) positions[t] = double(p.first_position + t);
    rotate_in_place({x.data(), n * width, d_head, width}, {batch, heads, n, d_head}, *p.rope, positions, inverse);
}

// Query heads r, r + g, r + 2g, ... of x (B, N_q, H * d_head): the r-th member of every group, so
// head j of the view reads K/V head j (the view has H_kv heads).
template <class T>
Strided<T> member_heads(T* x, const Sizes& s, std::size_t r) {
    return {x + r * s.d_head, s.nq * s.heads * s.d_head, s.group() * s.d_head, s.heads * s.d_head};
}
template <class T>
Strided<T> kv_heads_of(T* x, const Sizes& s) {
    return {x, s.nk * s.kv_width(), s.d_head, s.kv_width()};
}

// Sum over the rows of x (rows, n), in double.
Tensor1 column_sums(const float* x, std::size_t rows, std::size_t n) {
    std::vector<double> acc(n, 0.0);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < n; ++c) acc[c] += x[r * n + c];
    Tensor1 out = Tensor1::from_shape({n});
    for (std::size_t c = 0; c < n; ++c) out(c) = static_cast<float>(acc[c]);
    return out;
}

// (B, H_rep, N, d_head) -> (B, H_rep / g, N, d_head): each group of g neighbouring heads summed.
Tensor4 sum_groups(const Tensor4& x, std::size_t g) {
    const std::size_t batch = x.shape()[0], heads = x.shape()[1] / g, n = x.shape()[2], d_head = x.shape()[3];
    Tensor4 out = xt::zeros<float>({batch, heads, n, d_head});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads * g; ++h)
            for (std::size_t t = 0; t < n; ++t)
                for (std::size_t c = 0; c < d_head; ++c) out(b, h / g, t, c) += x(b, h, t, c);
    return out;
}

struct AttentionGradsRows {
    Tensor3 dq, dk, dv;  // (B, N_q, H * d_head), (B, N_k, H_kv * d_head) twice
};

// ALiBi: the bias is not in the fused path; the double-precision reference runs, on copies.
AttentionGradsRows alibi_backward(const Sizes& s, const LayerTape& tape, const Tensor3& d_heads,
                                  const AttentionOptions& options) {
    const Tensor3 bias = alibi_bias(s.heads, s.nq, s.nk);                     // (H, N_q, N_k)
    const Tensor4 q = split_heads(tape.q, s.heads);                           // (B, H, N_q, d_head)
    const Tensor4 k = repeat_kv(split_heads(tape.k, s.kv_heads), s.group());  // (B, H, N_k, d_head)
    const Tensor4 v = repeat_kv(split_heads(tape.v, s.kv_heads), s.group());  // (B, H, N_k, d_head)
    const AttentionGrads g = attention_backward_reference(q, k, v, split_heads(d_heads, s.heads), options, &bias);
    return {merge_heads(g.dq), merge_heads(sum_groups(g.dk, s.group())), merge_heads(sum_groups(g.dv, s.group()))};
}

AttentionGradsRows fused_backward(const Sizes& s, const LayerTape& tape, const Tensor3& d_heads,
                                  const AttentionOptions& options) {
    AttentionGradsRows g{Tensor3::from_shape({s.batch, s.nq, s.heads * s.d_head}),
                         Tensor3::from_shape({s.batch, s.nk, s.kv_width()}),
                         Tensor3::from_shape({s.batch, s.nk, s.kv_width()})};
    Tensor3 dk_member, dv_member;  // the later members' dk, dv, added to the first's
    if (s.group() > 1) dk_member = dv_member = Tensor3::from_shape({s.batch, s.nk, s.kv_width()});
    const float scale = scale_of(options, s.d_head);
    const std::size_t lse_size = s.batch * s.kv_heads * s.nq;
    for (std::size_t r = 0; r < s.group(); ++r) {
        float* dk = r == 0 ? g.dk.data() : dk_member.data();
        float* dv = r == 0 ? g.dv.data() : dv_member.data();
        detail::fused_attention_backward(s.per_member(), member_heads(tape.q.data(), s, r),
                                         kv_heads_of(tape.k.data(), s), kv_heads_of(tape.v.data(), s),
                                         member_heads(tape.heads.data(), s, r), member_heads(d_heads.data(), s, r),
                                         tape.lse.data() + r * lse_size, member_heads(g.dq.data(), s, r),
                                         kv_heads_of(dk, s), kv_heads_of(dv, s), scale, options);
        if (r > 0) {
            g.dk += dk_member;
            g.dv += dv_member;
        }
    }
    return g;
}

// dW[rows r0 ..) (width, d_model) = dy^T . x, and db[r0 ..) = the column sums of dy (rows of B * N).
void weight_grads(const Tensor3& dy, const Tensor3& x, std::size_t r0, LayerGrads& g) {
    const std::size_t rows = x.shape()[0] * x.shape()[1], d = x.shape()[2], width = dy.shape()[2];
    blas::gemm(true, false, width, d, rows, 1.0f, dy.data(), width, x.data(), d, 0.0f, g.in_proj_weight.data() + r0 * d,
               d);
    if (g.in_proj_bias.size() != 0) {
        const Tensor1 db = column_sums(dy.data(), rows, width);
        std::copy(db.begin(), db.end(), g.in_proj_bias.begin() + r0);
    }
}

// dx (B, N, d_model) (+)= dy (B, N, width) . W[r0 .. r0 + width)
void input_grad(const GroupedQueryAttention& m, const Tensor3& dy, std::size_t r0, bool accumulate, Tensor3& dx) {
    const std::size_t rows = dy.shape()[0] * dy.shape()[1], width = dy.shape()[2], d = m.d_model();
    if (dx.size() == 0) dx = Tensor3::from_shape({dy.shape()[0], dy.shape()[1], d});
    blas::gemm(false, false, rows, d, width, 1.0f, dy.data(), width, m.in_proj_weight.data() + r0 * d, d,
               accumulate ? 1.0f : 0.0f, dx.data(), d);
}

}  // namespace

Tensor3 layer_forward(const GroupedQueryAttention& m, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                      const PositionEncoding& positions, const AttentionOptions& options, LayerTape& tape) {
    const Sizes s = sizes_of(m, query, key, value);
    check_masks(options, s.batch, s.nq, s.nk);
    const std::size_t d = s.d_model, kvw = s.kv_width();
    limits::charge_work(2.0 * double(d) * double(s.batch) * (2.0 * double(s.nq * d) + 2.0 * double(s.nk * kvw)) +
                            double(s.batch * s.heads) * double(s.nq * s.nk) * (4.0 * double(s.d_head) + 25.0),
                        "attention layer forward");
    tape.self_attention = same_tensor(query, key) && same_tensor(key, value);
    tape.q = project(m, query, 0, d);          // (B, N_q, H * d_head)
    tape.k = project(m, key, d, kvw);          // (B, N_k, H_kv * d_head)
    tape.v = project(m, value, d + kvw, kvw);  // (B, N_k, H_kv * d_head)
    if (positions.rope) {
        validate(*positions.rope, s.d_head);
        rope(tape.q, s.heads, s.d_head, positions, false);
        rope(tape.k, s.kv_heads, s.d_head, positions, false);
    }
    if (positions.alibi) {
        tape.lse.clear();
        const Tensor3 bias = alibi_bias(s.heads, s.nq, s.nk);  // (H, N_q, N_k)
        tape.heads = merge_heads(attention_with_bias(split_heads(tape.q, s.heads), split_heads(tape.k, s.kv_heads),
                                                     split_heads(tape.v, s.kv_heads), &bias, options));
    } else {
        tape.heads = Tensor3::from_shape({s.batch, s.nq, d});  // (B, N_q, H * d_head)
        tape.lse.resize(s.group() * s.batch * s.kv_heads * s.nq);
        for (std::size_t r = 0; r < s.group(); ++r)
            detail::fused_attention(s.per_member(), member_heads(std::as_const(tape.q).data(), s, r),
                                    kv_heads_of(std::as_const(tape.k).data(), s),
                                    kv_heads_of(std::as_const(tape.v).data(), s), member_heads(tape.heads.data(), s, r),
                                    scale_of(options, s.d_head), options, {},
                                    tape.lse.data() + r * s.batch * s.kv_heads * s.nq);
    }
    Tensor3 y = Tensor3::from_shape({s.batch, s.nq, d});  // (B, N_q, d_model)
    detail::linear_rows(tape.heads.data(), s.batch * s.nq, d, m.out_proj_weight.data(), d,
                        m.out_proj_bias.size() ? m.out_proj_bias.data() : nullptr, y.data());
    return y;
}

LayerGrads layer_backward(const GroupedQueryAttention& m, const Tensor3& query, const Tensor3& key,
                          const Tensor3& value, const PositionEncoding& positions, const AttentionOptions& options,
                          const LayerTape& tape, const Tensor3& d_y) {
    const Sizes s = sizes_of(m, query, key, value);
    const std::size_t d = s.d_model, kvw = s.kv_width(), rows_q = s.batch * s.nq;
    if (d_y.shape()[0] != s.batch || d_y.shape()[1] != s.nq || d_y.shape()[2] != d)
        throw usage_error(
            fmt::format("attention layer backward: d_y must be the output's shape ({}, {}, {}), got "
                        "({}, {}, {})",
                        s.batch, s.nq, d, d_y.shape()[0], d_y.shape()[1], d_y.shape()[2]));
    if (tape.heads.shape()[0] != s.batch || tape.heads.shape()[1] != s.nq)
        throw usage_error("attention layer backward: the tape is not from a forward on these inputs");
    limits::charge_work(4.0 * double(d) * double(s.batch) * (2.0 * double(s.nq * d) + 2.0 * double(s.nk * kvw)) +
                            double(s.batch * s.heads) * double(s.nq * s.nk) * (10.0 * double(s.d_head) + 50.0),
                        "attention layer backward");
    LayerGrads g;
    g.in_proj_weight = Tensor2::from_shape(m.in_proj_weight.shape());
    if (m.in_proj_bias.size() != 0) g.in_proj_bias = Tensor1::from_shape(m.in_proj_bias.shape());
    // Through out_proj: dW_o (d_model, d_model) = d_y^T . heads, db_o = sum d_y, d_heads = d_y . W_o.
    g.out_proj_weight = Tensor2::from_shape({d, d});
    blas::gemm(true, false, d, d, rows_q, 1.0f, d_y.data(), d, tape.heads.data(), d, 0.0f, g.out_proj_weight.data(), d);
    if (m.out_proj_bias.size() != 0) g.out_proj_bias = column_sums(d_y.data(), rows_q, d);
    Tensor3 d_heads = Tensor3::from_shape({s.batch, s.nq, d});  // (B, N_q, H * d_head)
    blas::gemm(false, false, rows_q, d, d, 1.0f, d_y.data(), d, m.out_proj_weight.data(), d, 0.0f, d_heads.data(), d);
    // Through the attention, then RoPE back.
    AttentionGradsRows a =
        positions.alibi ? alibi_backward(s, tape, d_heads, options) : fused_backward(s, tape, d_heads, options);
    if (positions.rope) {
        rope(a.dq, s.heads, s.d_head, positions, true);
        rope(a.dk, s.kv_heads, s.d_head, positions, true);
    }
    // Through the projections: W_q, W_k, W_v's rows, their biases, and the inputs.
    weight_grads(a.dq, query, 0, g);
    weight_grads(a.dk, key, d, g);
    weight_grads(a.dv, value, d + kvw, g);
    input_grad(m, a.dq, 0, false, g.query);
    if (tape.self_attention) {  // x took all three paths: d_x is their sum
        input_grad(m, a.dk, d, true, g.query);
        input_grad(m, a.dv, d + kvw, true, g.query);
    } else {
        input_grad(m, a.dk, d, false, g.key);
        input_grad(m, a.dv, d + kvw, false, g.value);
    }
    return g;
}

std::size_t layer_backward_bytes(const GroupedQueryAttention& m, std::size_t batch, std::size_t nq, std::size_t nk,
                                 bool self_attention, bool alibi) {
    const std::size_t d = m.d_model(), kvw = m.kv_width(), g = m.group();
    const std::size_t q_sized = batch * nq * d, kv_sized = batch * nk * kvw, inputs = batch * nk * d;
    // Tape: q, heads, k, v and the lse; gradients: the inputs' and the parameters'; temporaries:
    // d_heads, dq, dk, dv and the later group members' dk, dv.
    std::size_t floats = 2 * q_sized + 2 * kv_sized + batch * m.heads * nq;
    floats += q_sized + (self_attention ? 0 : 2 * inputs) + m.in_proj_weight.size() + m.in_proj_bias.size() +
              m.out_proj_weight.size() + m.out_proj_bias.size();
    floats += 2 * q_sized + 2 * kv_sized + (g > 1 ? 2 * kv_sized : 0);
    std::size_t bytes = floats * sizeof(float);
    const detail::AttentionShape member{batch, m.kv_heads, nq, nk, m.d_head()};
    bytes +=
        std::max(detail::fused_attention_scratch_bytes(member), detail::fused_attention_backward_scratch_bytes(member));
    if (alibi) {  // the (H, N_q, N_k) bias and the reference's per-head copies and gradients, twice over
        const std::size_t per_head = batch * m.heads * std::max(nq, nk) * m.d_head();
        bytes += (m.heads * nq * nk + 16 * per_head) * sizeof(float);
    }
    return bytes;
}

}  // namespace headwise
