#include "headwise/reference/layer_backward.hpp"

#include "headwise/base/limits.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/fused_backward.hpp"
#include "headwise/fast/huge_pages.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/reference/attention.hpp"
#include "headwise/reference/attention_backward.hpp"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>
#include <utility>

namespace headwise {

namespace {

using fast::Strided;

// The sizes of one layer call, named as in the header.
struct Sizes {
    std::size_t batch, nq, nk, d_model, d_head, heads, kv_heads;
    std::size_t group() const { return heads / kv_heads; }
    std::size_t kv_width() const { return kv_heads * d_head; }
    fast::AttentionShape per_member() const { return {batch, kv_heads, nq, nk, d_head}; }
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

// A (B, N, width) tensor for a one-shot process to fill: asked for in huge pages before its first
// write (huge_pages.hpp: a 4 KiB page fault per 4 KiB is a tenth of the time at these sizes).
Tensor3 fresh(std::size_t batch, std::size_t n, std::size_t width) {
    Tensor3 t = Tensor3::from_shape({batch, n, width});
    prefer_huge_pages(t.data(), t.size() * sizeof(float));
    return t;
}

bool same_tensor(const Tensor3& a, const Tensor3& b) { return a.data() == b.data() && a.shape() == b.shape(); }

float scale_of(const AttentionOptions& o, std::size_t d_head) {
    return o.scale.value_or(1.0f / std::sqrt(static_cast<float>(d_head)));
}

// Where q, k and v live (in the tape, and their gradients in the backward): self-attention keeps
// them side by side in one (B, N, H d_head + 2 H_kv d_head) tensor, so x goes through all of W_in
// in one GEMM and its gradient comes back through one; cross-attention keeps three tensors, one per
// input. A Path is one input's projection: rows [r0, r0 + width) of W_in, into slot `slot`.
struct Path {
    const Tensor3* x;
    std::size_t r0, width, slot;
};

std::vector<Path> paths_of(const Sizes& s, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                           bool self_attention) {
    if (self_attention) return {{&query, 0, s.d_model + 2 * s.kv_width(), 0}};
    return {{&query, 0, s.d_model, 0},
            {&key, s.d_model, s.kv_width(), 1},
            {&value, s.d_model + s.kv_width(), s.kv_width(), 2}};
}

// q, k or v: `width` columns from `col` of a (B, N, ld) tensor.
template <class T>
struct Columns {
    T* data;  // the first row's first column
    std::size_t batch, n, width, ld;
    Strided<T> heads(std::size_t d_head) const { return fast::heads_in_rows(data, n, ld, d_head); }
};

// The three blocks of `store` (laid out by paths_of): 0 = q, 1 = k, 2 = v.
template <class Store>
auto block(Store& store, const Sizes& s, std::size_t which) {
    const bool shared = store.size() == 1;
    auto& t = store[shared ? 0 : which];
    const std::size_t col = shared ? (which == 0 ? 0 : s.d_model + (which - 1) * s.kv_width()) : 0;
    const std::size_t width = which == 0 ? s.d_model : s.kv_width();
    return Columns<std::remove_reference_t<decltype(*t.data())>>{t.data() + col, t.shape()[0], t.shape()[1], width,
                                                                 t.shape()[2]};
}

// The block as a tensor of its own (B, N, width): for the reference paths (ALiBi), which take tensors.
Tensor3 copy_of(Columns<const float> c) {
    Tensor3 out = Tensor3::from_shape({c.batch, c.n, c.width});
    for (std::size_t r = 0; r < c.batch * c.n; ++r)
        std::copy(c.data + r * c.ld, c.data + r * c.ld + c.width, out.data() + r * c.width);
    return out;
}

// dst (+)= src, a (B, N, width) tensor into a block of the same shape.
void copy_into(const Tensor3& src, Columns<float> dst, bool accumulate) {
    for (std::size_t r = 0; r < dst.batch * dst.n; ++r) {
        const float* from = src.data() + r * dst.width;
        float* to = dst.data + r * dst.ld;
        for (std::size_t c = 0; c < dst.width; ++c) to[c] = accumulate ? to[c] + from[c] : from[c];
    }
}

// The projections of every path: store[slot] (B, N, width) = x . W[r0 .. r0 + width)^T + b[r0 ..).
std::vector<Tensor3> project(const GroupedQueryAttention& m, const std::vector<Path>& paths) {
    const std::size_t d = m.d_model();
    std::vector<Tensor3> store(paths.size());
    for (const Path& p : paths) {
        const Tensor3& x = *p.x;
        store[p.slot] = fresh(x.shape()[0], x.shape()[1], p.width);
        fast::linear_rows(x.data(), x.shape()[0] * x.shape()[1], d, m.in_proj_weight.data() + p.r0 * d, p.width,
                          m.in_proj_bias.size() ? m.in_proj_bias.data() + p.r0 : nullptr, store[p.slot].data());
    }
    return store;
}

// A block of heads * d_head columns rotated in place (or back, `inverse`), token t at position first + t.
void rope(Columns<float> x, std::size_t heads, std::size_t d_head, const PositionEncoding& p, bool inverse) {
    std::vector<double> positions(x.n);
    for (std::size_t t = 0; t < x.n; ++t) positions[t] = double(p.first_position + t);
    rotate_in_place(x.heads(d_head), {x.batch, heads, x.n, d_head}, *p.rope, positions, inverse);
}

// Query heads r, r + g, r + 2g, ... of a (B, N_q, H * d_head) block: the r-th member of every
// group, so head j of the view reads K/V head j (the view has H_kv heads).
template <class T>
Strided<T> member_heads(Columns<T> x, const Sizes& s, std::size_t r) {
    return fast::heads_in_rows(x.data + r * s.d_head, x.n, x.ld, s.group() * s.d_head);
}

// A whole (B, N, width) tensor as a block.
template <class T>
Columns<T> all_of(T* data, const Tensor3& t) {
    return {data, t.shape()[0], t.shape()[1], t.shape()[2], t.shape()[2]};
}

// Sum over the rows of x (rows, n): each task a band of 64 columns, summed in float over 64 rows at
// a time (a loop the compiler vectorises), the blocks added in double.
Tensor1 column_sums(const float* x, std::size_t rows, std::size_t n) {
    constexpr std::size_t band = 64, block = 64;
    Tensor1 out = Tensor1::from_shape({n});
    fast::parallel_for((n + band - 1) / band, [&](std::size_t t, std::size_t) {
        const std::size_t c0 = t * band, width = std::min(band, n - c0);
        double total[band] = {};
        for (std::size_t r0 = 0; r0 < rows; r0 += block) {
            float partial[band] = {};
            for (std::size_t r = r0; r < std::min(rows, r0 + block); ++r)
                for (std::size_t c = 0; c < width; ++c) partial[c] += x[r * n + c0 + c];
            for (std::size_t c = 0; c < width; ++c) total[c] += partial[c];
        }
        for (std::size_t c = 0; c < width; ++c) out(c0 + c) = static_cast<float>(total[c]);
    });
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

// ALiBi: the bias is not in the fused path; the double-precision reference runs, on copies, and its
// dq, dk, dv are written into `grads` (laid out as the tape's q, k, v).
void alibi_backward(const Sizes& s, const LayerTape& tape, const Tensor3& d_heads, const AttentionOptions& options,
                    std::vector<Tensor3>& grads) {
    const Tensor3 bias = alibi_bias(s.heads, s.nq, s.nk);                          // (H, N_q, N_k)
    const Tensor4 q = split_heads(copy_of(block(tape.projected, s, 0)), s.heads);  // (B, H, N_q, d_head)
    const Tensor4 k = repeat_kv(split_heads(copy_of(block(tape.projected, s, 1)), s.kv_heads), s.group());
    const Tensor4 v = repeat_kv(split_heads(copy_of(block(tape.projected, s, 2)), s.kv_heads), s.group());
    const AttentionGrads g = attention_backward_reference(q, k, v, split_heads(d_heads, s.heads), options, &bias);
    copy_into(merge_heads(g.dq), block(grads, s, 0), false);
    copy_into(merge_heads(sum_groups(g.dk, s.group())), block(grads, s, 1), false);
    copy_into(merge_heads(sum_groups(g.dv, s.group())), block(grads, s, 2), false);
}

// The fused backward, once per member of each query group; the later members' dk, dv are added to
// the first's. `grads` may be tape.projected itself where backward_writes_in_place (one member).
void fused_backward(const Sizes& s, const LayerTape& tape, const Tensor3& d_heads, const AttentionOptions& options,
                    std::vector<Tensor3>& grads) {
    const Columns<const float> q = block(tape.projected, s, 0), k = block(tape.projected, s, 1),
                               v = block(tape.projected, s, 2);
    const Columns<float> dq = block(grads, s, 0), dk = block(grads, s, 1), dv = block(grads, s, 2);
    Tensor3 dk_member, dv_member;  // (B, N_k, H_kv * d_head): a later member's dk, dv
    if (s.group() > 1) dk_member = dv_member = Tensor3::from_shape({s.batch, s.nk, s.kv_width()});
    const float scale = scale_of(options, s.d_head);
    const std::size_t lse_size = s.batch * s.kv_heads * s.nq;
    for (std::size_t r = 0; r < s.group(); ++r) {
        const Columns<float> dk_r = r == 0 ? dk : all_of(dk_member.data(), dk_member);
        const Columns<float> dv_r = r == 0 ? dv : all_of(dv_member.data(), dv_member);
        fast::fused_attention_backward(s.per_member(), member_heads(q, s, r), k.heads(s.d_head), v.heads(s.d_head),
                                       member_heads(all_of(tape.heads.data(), tape.heads), s, r),
                                       member_heads(all_of(d_heads.data(), d_heads), s, r),
                                       tape.lse.data() + r * lse_size, member_heads(dq, s, r), dk_r.heads(s.d_head),
                                       dv_r.heads(s.d_head), scale, options);
        if (r > 0) {
            copy_into(dk_member, dk, true);
            copy_into(dv_member, dv, true);
        }
    }
}

// Through the projections, one path at a time: dW[r0 .. r0 + width) = dy^T . x, db = the column
// sums of dy, and d_x = dy . W[r0 .. r0 + width) (each input has one path). The query's d_x is
// written into `spare`, a dead (B, N_q, d_model) buffer whose pages are already touched.
void projection_grads(const GroupedQueryAttention& m, const std::vector<Path>& paths, const std::vector<Tensor3>& dy,
                      Tensor3&& spare, LayerGrads& g) {
    const std::size_t d = m.d_model();
    Tensor3* dx[] = {&g.query, &g.key, &g.value};
    for (const Path& p : paths) {
        const Tensor3& x = *p.x;
        const float* dy_p = dy[p.slot].data();  // (B, N, width)
        const std::size_t rows = x.shape()[0] * x.shape()[1];
        fast::gemm_rows(true, false, p.width, d, rows, dy_p, p.width, x.data(), d, 0.0f,
                        g.in_proj_weight.data() + p.r0 * d, d);
        if (g.in_proj_bias.size() != 0) {
            const Tensor1 db = column_sums(dy_p, rows, p.width);
            std::copy(db.begin(), db.end(), g.in_proj_bias.begin() + p.r0);
        }
        Tensor3& d_input = *dx[p.slot];
        d_input = p.slot == 0 ? std::move(spare) : fresh(x.shape()[0], x.shape()[1], d);
        fast::gemm_rows(false, false, rows, d, p.width, dy_p, p.width, m.in_proj_weight.data() + p.r0 * d, d, 0.0f,
                        d_input.data(), d);
    }
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
    tape.projected = project(m, paths_of(s, query, key, value, tape.self_attention));  // q, k, v
    const Columns<float> q = block(tape.projected, s, 0), k = block(tape.projected, s, 1);
    if (positions.rope) {
        validate(*positions.rope, s.d_head);
        rope(q, s.heads, s.d_head, positions, false);
        rope(k, s.kv_heads, s.d_head, positions, false);
    }
    if (positions.alibi) {
        tape.lse.clear();
        const Tensor3 bias = alibi_bias(s.heads, s.nq, s.nk);  // (H, N_q, N_k)
        const auto copy = [&](std::size_t which) { return copy_of(block(std::as_const(tape.projected), s, which)); };
        tape.heads = merge_heads(attention_with_bias(split_heads(copy(0), s.heads), split_heads(copy(1), s.kv_heads),
                                                     split_heads(copy(2), s.kv_heads), &bias, options));
    } else {
        const Columns<const float> cq = block(std::as_const(tape.projected), s, 0),
                                   ck = block(std::as_const(tape.projected), s, 1),
                                   cv = block(std::as_const(tape.projected), s, 2);
        tape.heads = fresh(s.batch, s.nq, d);  // (B, N_q, H * d_head)
        tape.lse.resize(s.group() * s.batch * s.kv_heads * s.nq);
        for (std::size_t r = 0; r < s.group(); ++r)
            fast::fused_attention(s.per_member(), member_heads(cq, s, r), ck.heads(s.d_head), cv.heads(s.d_head),
                                  member_heads(all_of(tape.heads.data(), tape.heads), s, r),
                                  scale_of(options, s.d_head), options, {},
                                  tape.lse.data() + r * s.batch * s.kv_heads * s.nq);
    }
    Tensor3 y = fresh(s.batch, s.nq, d);  // (B, N_q, d_model)
    fast::linear_rows(tape.heads.data(), s.batch * s.nq, d, m.out_proj_weight.data(), d,
                      m.out_proj_bias.size() ? m.out_proj_bias.data() : nullptr, y.data());
    return y;
}

LayerGrads layer_backward(const GroupedQueryAttention& m, const Tensor3& query, const Tensor3& key,
                          const Tensor3& value, const PositionEncoding& positions, const AttentionOptions& options,
                          LayerTape&& tape, const Tensor3& d_y) {
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
    fast::gemm_rows(true, false, d, d, rows_q, d_y.data(), d, tape.heads.data(), d, 0.0f, g.out_proj_weight.data(), d);
    if (m.out_proj_bias.size() != 0) g.out_proj_bias = column_sums(d_y.data(), rows_q, d);
    // Through the attention into dq, dk, dv (laid out as the tape's q, k, v), then RoPE back.
    const std::vector<Path> paths = paths_of(s, query, key, value, tape.self_attention);
    const bool in_place = !positions.alibi && s.group() == 1 && fast::backward_writes_in_place(s.per_member());
    std::vector<Tensor3> d_projected(paths.size());
    if (!in_place)
        for (const Path& p : paths) d_projected[p.slot] = fresh(p.x->shape()[0], p.x->shape()[1], p.width);
    Tensor3 d_heads = fresh(s.batch, s.nq, d);  // (B, N_q, H * d_head)
    fast::gemm_rows(false, false, rows_q, d, d, d_y.data(), d, m.out_proj_weight.data(), d, 0.0f, d_heads.data(), d);
    if (positions.alibi)
        alibi_backward(s, tape, d_heads, options, d_projected);
    else
        fused_backward(s, tape, d_heads, options, in_place ? tape.projected : d_projected);
    if (in_place) d_projected = std::move(tape.projected);  // q, k, v are dq, dk, dv now
    if (positions.rope) {
        rope(block(d_projected, s, 0), s.heads, s.d_head, positions, true);
        rope(block(d_projected, s, 1), s.kv_heads, s.d_head, positions, true);
    }
    // Through the projections: W_in's rows, its bias, and the inputs (self-attention: one path, so
    // d_x is the three paths' sum by construction).
    projection_grads(m, paths, d_projected, std::move(d_heads), g);  // d_heads is dead: d_query takes its pages
    return g;
}

std::size_t layer_backward_bytes(const GroupedQueryAttention& m, std::size_t batch, std::size_t nq, std::size_t nk,
                                 bool self_attention, bool alibi) {
    const std::size_t d = m.d_model(), kvw = m.kv_width(), g = m.group();
    const std::size_t q_sized = batch * nq * d, kv_sized = batch * nk * kvw, inputs = batch * nk * d;
    // Tape: q, heads, k, v and the lse; gradients: the inputs' (the query's in d_heads' buffer) and
    // the parameters'; temporaries: d_heads, dq, dk, dv and the later group members' dk, dv.
    std::size_t floats = 2 * q_sized + 2 * kv_sized + batch * m.heads * nq;
    floats += (self_attention ? 0 : 2 * inputs) + m.in_proj_weight.size() + m.in_proj_bias.size() +
              m.out_proj_weight.size() + m.out_proj_bias.size();
    floats += 2 * q_sized + 2 * kv_sized + (g > 1 ? 2 * kv_sized : 0);
    std::size_t bytes = floats * sizeof(float);
    const fast::AttentionShape member{batch, m.kv_heads, nq, nk, m.d_head()};
    bytes +=
        std::max(fast::fused_attention_scratch_bytes(member), fast::fused_attention_backward_scratch_bytes(member));
    if (alibi) {  // the (H, N_q, N_k) bias and the reference's per-head copies and gradients, twice over
        const std::size_t per_head = batch * m.heads * std::max(nq, nk) * m.d_head();
        bytes += (m.heads * nq * nk + 16 * per_head) * sizeof(float);
    }
    return bytes;
}

}  // namespace headwise
