#include "headwise/reference/layer.hpp"

#include "headwise/base/limits.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace headwise {

namespace {

using fast::Strided;

// x (B, N, d_model) . W[rows r0 .. r0 + width)^T + b -> (B, heads, N, d_head)
Tensor4 project(const GroupedQueryAttention& m, const Tensor3& x, std::size_t r0, std::size_t heads) {
    const std::size_t d = m.d_model(), width = heads * m.d_head();
    if (x.shape()[2] != d) {
        throw usage_error(
            fmt::format("grouped-query attention: inputs must have d_model = {} features, got {}", d, x.shape()[2]));
    }
    limits::charge_work(2.0 * double(x.shape()[0] * x.shape()[1]) * double(d) * double(width),
                        "grouped-query projections");
    Tensor3 y = Tensor3::from_shape({x.shape()[0], x.shape()[1], width});  // (B, N, heads * d_head)
    fast::linear_rows(x.data(), x.shape()[0] * x.shape()[1], d, m.in_proj_weight.data() + r0 * d, width,
                      m.in_proj_bias.size() ? m.in_proj_bias.data() + r0 : nullptr, y.data());
    return split_heads(y, heads);
}

}  // namespace

std::size_t query_group(std::size_t heads, std::size_t kv_heads) {
    if (heads == 0 || kv_heads == 0) {
        throw usage_error(
            fmt::format("grouped-query attention needs at least one head: H = {}, H_kv = {}", heads, kv_heads));
    }
    if (heads % kv_heads != 0) {
        throw usage_error(
            fmt::format("H = {} query heads cannot be shared evenly by H_kv = {} key/value heads: "
                        "H_kv must divide H (H / H_kv would be {:g})",
                        heads, kv_heads, double(heads) / double(kv_heads)));
    }
    return heads / kv_heads;
}

Tensor4 repeat_kv(const Tensor4& kv, std::size_t group) {
    const std::size_t batch = kv.shape()[0], kv_heads = kv.shape()[1], n = kv.shape()[2], d_head = kv.shape()[3];
    if (group == 0) throw usage_error("repeat_kv: group must be at least 1");
    limits::charge_work(2.0 * double(kv.size()) * double(group), "repeat_kv");
    Tensor4 out = Tensor4::from_shape({batch, kv_heads * group, n, d_head});  // (B, H, N, d_head)
    const std::size_t block = n * d_head;
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < kv_heads * group; ++h) {
            const float* src = kv.data() + (b * kv_heads + kv_head_of(h, group)) * block;
            std::copy(src, src + block, out.data() + (b * kv_heads * group + h) * block);
        }
    return out;
}

void grouped_query_attention_into(const fast::AttentionShape& s, std::size_t kv_heads, Strided<const float> q,
                                  Strided<const float> k, Strided<const float> v, Strided<float> out, float scale,
                                  const AttentionOptions& options) {
    const std::size_t group = s.heads / kv_heads;
    limits::charge_work(double(s.batch * s.heads) * double(s.nq * s.nk) * (4.0 * double(s.d_head) + 25.0),
                        "grouped-query attention");
    // Without a per-query mask, the `group` query heads that share K/V head j are just more query
    // rows for it: when each head's rows follow the previous head's (row stride d_head, as in a
    // contiguous (B, H, N_q, d_head) tensor), heads j*g .. j*g + g - 1 form one (g * N_q, d_head)
    // block, and the whole problem is one pass over H_kv heads. A decode step is this case.
    const bool rows_follow =
        q.row == s.d_head && q.head == s.nq * q.row && out.row == s.d_head && out.head == s.nq * out.row;
    if (!options.causal && options.attn_mask == nullptr && rows_follow) {
        fast::fused_attention({s.batch, kv_heads, group * s.nq, s.nk, s.d_head},
                              {q.data, q.batch, group * q.head, q.row}, k, v,
                              {out.data, out.batch, group * out.head, out.row}, scale, options);
        return;
    }
    // Otherwise one fused pass per K/V head, over the query heads that read it (K and V get a head
    // stride of 0, so each of those query heads reads the same rows and nothing is copied).
    for (std::size_t g = 0; g < kv_heads; ++g) {
        fast::fused_attention({s.batch, group, s.nq, s.nk, s.d_head},
                              {q.data + g * group * q.head, q.batch, q.head, q.row},
                              {k.data + g * k.head, k.batch, 0, k.row}, {v.data + g * v.head, v.batch, 0, v.row},
                              {out.data + g * group * out.head, out.batch, out.head, out.row}, scale, options);
    }
}

Tensor4 grouped_query_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, const AttentionOptions& options,
                                Tensor4* weights) {
    const auto &sq = q.shape(), &sk = k.shape();
    if (sq[0] != sk[0] || sq[3] != sk[3] || k.shape() != v.shape()) {
        throw usage_error(
            fmt::format("grouped-query attention: q (B, H, N_q, d_head) = ({}, {}, {}, {}) does not fit "
                        "k ({}, {}, {}, {}) and v ({}, {}, {}, {})",
                        sq[0], sq[1], sq[2], sq[3], sk[0], sk[1], sk[2], sk[3], v.shape()[0], v.shape()[1],
                        v.shape()[2], v.shape()[3]));
    }
    const std::size_t group = query_group(sq[1], sk[1]);
    if (weights != nullptr) {  // the weights are (B, H, N_q, N_k) anyway: let the library's attention make them
        return scaled_dot_product_attention(q, repeat_kv(k, group), repeat_kv(v, group), options, weights);
    }
    const std::size_t batch = sq[0], heads = sq[1], nq = sq[2], d_head = sq[3], kv_heads = sk[1], nk = sk[2];
    check_masks(options, batch, nq, nk);
    Tensor4 out = Tensor4::from_shape({batch, heads, nq, d_head});
    const float scale = options.scale.value_or(1.0f / std::sqrt(static_cast<float>(d_head)));
    grouped_query_attention_into({batch, heads, nq, nk, d_head}, kv_heads,
                                 fast::contiguous_heads<const float>(q.data(), heads, nq, d_head),
                                 fast::contiguous_heads<const float>(k.data(), kv_heads, nk, d_head),
                                 fast::contiguous_heads<const float>(v.data(), kv_heads, nk, d_head),
                                 fast::contiguous_heads<float>(out.data(), heads, nq, d_head), scale, options);
    return out;
}

// ---------------------------------------------------------------------------------------------

GroupedQueryAttention GroupedQueryAttention::random(std::size_t d_model, std::size_t heads, std::size_t kv_heads,
                                                    bool bias, Random& rng) {
    query_group(heads, kv_heads);
    if (d_model == 0 || d_model % heads != 0) {
        throw usage_error(
            fmt::format("grouped-query attention: d_model = {} is not divisible by heads = {}", d_model, heads));
    }
    const std::size_t rows = d_model + 2 * kv_heads * (d_model / heads);
    GroupedQueryAttention m;
    m.heads = heads;
    m.kv_heads = kv_heads;
    m.in_proj_weight = rng.linear_weight(rows, d_model);
    m.out_proj_weight = rng.linear_weight(d_model, d_model);
    if (bias) {
        m.in_proj_bias = rng.uniform<1>({rows}, -0.1f, 0.1f);
        m.out_proj_bias = rng.uniform<1>({d_model}, -0.1f, 0.1f);
    }
    m.validate();
    return m;
}

GroupedQueryAttention GroupedQueryAttention::from_multi_head(const MultiHeadAttention& m) {
    m.validate();
    return {m.heads, m.heads, m.in_proj_weight, m.in_proj_bias, m.out_proj_weight, m.out_proj_bias};
}

MultiHeadAttention GroupedQueryAttention::with_repeated_kv() const {
    validate();
    const std::size_t d = d_model(), dh = d_head(), g = group();
    MultiHeadAttention m;
    m.heads = heads;
    m.out_proj_weight = out_proj_weight;
    m.out_proj_bias = out_proj_bias;
    m.in_proj_weight = Tensor2::from_shape({3 * d, d});
    if (in_proj_bias.size()) m.in_proj_bias = Tensor1::from_shape({3 * d});
    // Row block of query head h in W_q stays; W_k and W_v get, for head h, the rows of K/V head h / g.
    auto copy_rows = [&](std::size_t from, std::size_t to, std::size_t rows) {
        std::copy_n(in_proj_weight.data() + from * d, rows * d, m.in_proj_weight.data() + to * d);
        if (in_proj_bias.size()) std::copy_n(in_proj_bias.data() + from, rows, m.in_proj_bias.data() + to);
    };
    copy_rows(0, 0, d);
    for (std::size_t which = 0; which < 2; ++which)  // 0: W_k, 1: W_v
        for (std::size_t h = 0; h < heads; ++h)
            copy_rows(d + which * kv_width() + kv_head_of(h, g) * dh, (1 + which) * d + h * dh, dh);
    return m;
}

void GroupedQueryAttention::validate() const {
    query_group(heads, kv_heads);
    const std::size_t d = out_proj_weight.shape()[0];
    if (d == 0 || d % heads != 0) {
        throw usage_error(
            fmt::format("grouped-query attention: d_model = {} is not divisible by heads = {}", d, heads));
    }
    const std::size_t rows = d + 2 * kv_heads * (d / heads);
    if (out_proj_weight.shape()[1] != d) {
        throw usage_error(
            fmt::format("out_proj_weight must be (d_model, d_model), got ({}, {})", d, out_proj_weight.shape()[1]));
    }
    if (in_proj_weight.shape()[0] != rows || in_proj_weight.shape()[1] != d) {
        throw usage_error(
            fmt::format("in_proj_weight must be (H * d_head + 2 * H_kv * d_head, d_model) = ({}, {}) for "
                        "H = {}, H_kv = {}, d_head = {}; got ({}, {})",
                        rows, d, heads, kv_heads, d / heads, in_proj_weight.shape()[0], in_proj_weight.shape()[1]));
    }
    if (in_proj_bias.size() != 0 && in_proj_bias.size() != rows) {
        throw usage_error(fmt::format("in_proj_bias must have H * d_head + 2 * H_kv * d_head = {} entries, got {}",
                                      rows, in_proj_bias.size()));
    }
    if (out_proj_bias.size() != 0 && out_proj_bias.size() != d) {
        throw usage_error(fmt::format("out_proj_bias must have d_model = {} entries, got {}", d, out_proj_bias.size()));
    }
}

Tensor4 GroupedQueryAttention::project_q(const Tensor3& x) const { return project(*this, x, 0, heads); }
Tensor4 GroupedQueryAttention::project_k(const Tensor3& x) const { return project(*this, x, d_model(), kv_heads); }
Tensor4 GroupedQueryAttention::project_v(const Tensor3& x) const {
    return project(*this, x, d_model() + kv_width(), kv_heads);
}

Tensor3 GroupedQueryAttention::forward(const Tensor3& query, const Tensor3& key, const Tensor3& value,
                                       const AttentionOptions& options, Tensor4* weights) const {
    validate();
    if (key.shape() != value.shape() || query.shape()[0] != key.shape()[0]) {
        throw usage_error(
            fmt::format("grouped-query attention: query ({}, {}, {}), key ({}, {}, {}) and value ({}, {}, {}) "
                        "do not fit together",
                        query.shape()[0], query.shape()[1], query.shape()[2], key.shape()[0], key.shape()[1],
                        key.shape()[2], value.shape()[0], value.shape()[1], value.shape()[2]));
    }
    const Tensor4 q = project_q(query);                                            // (B, H, N_q, d_head)
    const Tensor4 k = project_k(key);                                              // (B, H_kv, N_k, d_head)
    const Tensor4 v = project_v(value);                                            // (B, H_kv, N_k, d_head)
    const Tensor4 heads_out = grouped_query_attention(q, k, v, options, weights);  // (B, H, N_q, d_head)
    return linear(merge_heads(heads_out), out_proj_weight, out_proj_bias);         // (B, N_q, d_model)
}

Tensor3 forward_with_positions(const GroupedQueryAttention& m, const Tensor3& query, const Tensor3& key,
                               const Tensor3& value, const PositionEncoding& positions, const AttentionOptions& options,
                               Tensor4* weights) {
    m.validate();
    Tensor4 q = m.project_q(query);  // (B, H, N_q, d_head)
    Tensor4 k = m.project_k(key);    // (B, H_kv, N_k, d_head)
    if (positions.rope) {
        validate(*positions.rope, m.d_head());
        q = apply_rope(q, *positions.rope, positions.first_position);
        k = apply_rope(k, *positions.rope, positions.first_position);
    }
    const Tensor4 v = m.project_v(value);  // (B, H_kv, N_k, d_head)
    Tensor4 heads_out;                     // (B, H, N_q, d_head)
    if (positions.alibi) {
        // Positions enter only as distances i - j: the same bias whatever first_position is.
        const Tensor3 bias = alibi_bias(m.heads, q.shape()[2], k.shape()[2]);  // (H, N_q, N_k)
        heads_out = attention_with_bias(q, k, v, &bias, options, weights);
    } else {
        heads_out = grouped_query_attention(q, k, v, options, weights);
    }
    return linear(merge_heads(heads_out), m.out_proj_weight, m.out_proj_bias);  // (B, N_q, d_model)
}

}  // namespace headwise
