#include "headwise/fast/fused_backward.hpp"

#include "headwise/fast/blas.hpp"
#include "headwise/fast/fused_tile.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/fast/vexp.hpp"

#include <algorithm>
#include <vector>

namespace headwise::detail {

namespace {

// One (batch, head)'s operands: row n of x is x.data + n * x.row.
struct HeadView {
    const float *q, *k, *v, *d_out, *lse, *d;  // lse and d: (N_q), one per query
    float *dq, *dk, *dv;
    std::size_t q_row, k_row, v_row, o_row, dq_row, dk_row, dv_row;
};

// Which gradients a pair of (query tile, key block) adds to.
enum Wants : unsigned { want_dq = 1, want_dkv = 2 };

// One core's two tiles, kept from pair to pair.
struct BackwardScratch {
    std::vector<float> p;   // (rows, keys): P, then dS
    std::vector<float> dp;  // (rows, keys): dP
    std::vector<float> d;   // (N_q): D of the head in hand (per-head tasks only)
};

class PairRun {
public:
    PairRun(const AttentionShape& s, std::size_t b, float scale, const AttentionOptions& o, BackwardScratch& w)
        : s_(s), b_(b), scale_(scale), o_(o), w_(w) {}

    // Queries [i0, i1) against keys [j0, j1) of head h.
    void run(const HeadView& h, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, unsigned wants) {
        const std::size_t n = i1 - i0, len = j1 - j0, dh = s_.d_head;
        float* const p = w_.p.data();
        float* const dp = w_.dp.data();
        // S (n, len) = scale q (n, d_head) . k^T (d_head, len)
        blas::gemm(false, true, n, len, dh, scale_, h.q + i0 * h.q_row, h.q_row, h.k + j0 * h.k_row, h.k_row, 0.0f, p,
                   len);
        // P = exp(S - L), masked keys 0 (and a row that saw no key, L = -inf, all 0)
        for (std::size_t r = 0; r < n; ++r) mask_scores(o_, b_, i0 + r, j0, j1, p + r * len);
        exp_shifted_rows(p, n, len, h.lse + i0);
        // dv (len, d_head) += P^T (len, n) . d_out (n, d_head)
        if (wants & want_dkv)
            blas::gemm(true, false, len, dh, n, 1.0f, p, len, h.d_out + i0 * h.o_row, h.o_row, 1.0f,
                       h.dv + j0 * h.dv_row, h.dv_row);
        // dP (n, len) = d_out (n, d_head) . v^T (d_head, len)
        blas::gemm(false, true, n, len, dh, 1.0f, h.d_out + i0 * h.o_row, h.o_row, h.v + j0 * h.v_row, h.v_row, 0.0f,
                   dp, len);
        // dS = P o (dP - D) * scale, over P's storage
        for (std::size_t r = 0; r < n; ++r) {
            float* row = p + r * len;
            const float* dp_row = dp + r * len;
            const float d = h.d[i0 + r];
            for (std::size_t j = 0; j < len; ++j) row[j] = row[j] * (dp_row[j] - d) * scale_;
        }
        // dq (n, d_head) += dS (n, len) . k (len, d_head)
        if (wants & want_dq)
            blas::gemm(false, false, n, dh, len, 1.0f, p, len, h.k + j0 * h.k_row, h.k_row, 1.0f, h.dq + i0 * h.dq_row,
                       h.dq_row);
        // dk (len, d_head) += dS^T (len, n) . q (n, d_head)
        if (wants & want_dkv)
            blas::gemm(true, false, len, dh, n, 1.0f, p, len, h.q + i0 * h.q_row, h.q_row, 1.0f, h.dk + j0 * h.dk_row,
                       h.dk_row);
    }

private:
    const AttentionShape& s_;
    std::size_t b_;
    float scale_;
    const AttentionOptions& o_;
    BackwardScratch& w_;
};

HeadView head_view(const AttentionShape& s, std::size_t bh, Strided<const float> q, Strided<const float> k,
                   Strided<const float> v, Strided<const float> d_out, const float* lse, const float* d,
                   Strided<float> dq, Strided<float> dk, Strided<float> dv) {
    const std::size_t b = bh / s.heads, h = bh % s.heads;
    auto at = [&](auto x) { return x.data + b * x.batch + h * x.head; };
    return {at(q),  at(k), at(v), at(d_out), lse + bh * s.nq, d,      at(dq), at(dk),
            at(dv), q.row, k.row, v.row,     d_out.row,       dq.row, dk.row, dv.row};
}

// D_i = sum_c d_out_ic out_ic for the N_q rows of head bh, into d.
void row_dots(const AttentionShape& s, std::size_t bh, Strided<const float> out, Strided<const float> d_out, float* d) {
    const std::size_t b = bh / s.heads, h = bh % s.heads;
    const float* o = out.data + b * out.batch + h * out.head;
    const float* g = d_out.data + b * d_out.batch + h * d_out.head;
    for (std::size_t i = 0; i < s.nq; ++i) {
        float sum = 0.0f;
        for (std::size_t c = 0; c < s.d_head; ++c) sum += o[i * out.row + c] * g[i * d_out.row + c];
        d[i] = sum;
    }
}

void zero_rows(float* x, std::size_t rows, std::size_t row, std::size_t width) {
    for (std::size_t r = 0; r < rows; ++r) std::fill(x + r * row, x + r * row + width, 0.0f);
}

// With a causal mask, queries [i0, i1) see none of keys [j0, ...) when i1 <= j0.
bool visible(const AttentionOptions& o, std::size_t i1, std::size_t j0) { return !o.causal || j0 < i1; }

bool per_head(const AttentionShape& s, const BackwardTiling& tiling) {
    if (tiling.split != BackwardSplit::automatic) return tiling.split == BackwardSplit::heads;
    return s.batch * s.heads >= 2 * worker_count();
}

}  // namespace

std::size_t fused_attention_backward_scratch_bytes(const AttentionShape& s, const BackwardTiling& tiling) {
    const std::size_t rows = std::max<std::size_t>(1, std::min(tiling.rows, s.nq));
    const std::size_t keys = std::max<std::size_t>(1, std::min(tiling.keys, s.nk));
    const std::size_t tiles = 2 * rows * keys * worker_count();
    const std::size_t d = per_head(s, tiling) ? s.nq * worker_count() : s.batch * s.heads * s.nq;
    return (tiles + d) * sizeof(float);
}

void fused_attention_backward(const AttentionShape& s, Strided<const float> q, Strided<const float> k,
                              Strided<const float> v, Strided<const float> out, Strided<const float> d_out,
                              const float* lse, Strided<float> dq, Strided<float> dk, Strided<float> dv, float scale,
                              const AttentionOptions& options, const BackwardTiling& tiling) {
    const std::size_t rows = std::max<std::size_t>(1, tiling.rows), keys = std::max<std::size_t>(1, tiling.keys);
    // Each core's two tiles at their largest from the start: grown pair by pair, a vector would
    // hold its old and new blocks at once.
    std::vector<BackwardScratch> scratch(worker_count());
    for (BackwardScratch& w : scratch) {
        w.p.resize(std::min(rows, s.nq) * std::min(keys, s.nk));
        w.dp.resize(w.p.size());
    }
    if (per_head(s, tiling)) {  // one head per task: its dq, dk and dv are this core's alone
        parallel_for(s.batch * s.heads, [&](std::size_t bh, std::size_t worker) {
            BackwardScratch& w = scratch[worker];
            w.d.resize(s.nq);
            row_dots(s, bh, out, d_out, w.d.data());
            const HeadView h = head_view(s, bh, q, k, v, d_out, lse, w.d.data(), dq, dk, dv);
            zero_rows(h.dq, s.nq, h.dq_row, s.d_head);
            zero_rows(h.dk, s.nk, h.dk_row, s.d_head);
            zero_rows(h.dv, s.nk, h.dv_row, s.d_head);
            PairRun pair(s, bh / s.heads, scale, options, w);
            for (std::size_t j0 = 0; j0 < s.nk; j0 += keys)
                for (std::size_t i0 = options.causal ? j0 / rows * rows : 0; i0 < s.nq; i0 += rows)
                    if (visible(options, std::min(s.nq, i0 + rows), j0))
                        pair.run(h, i0, std::min(s.nq, i0 + rows), j0, std::min(s.nk, j0 + keys), want_dq | want_dkv);
        });
        return;
    }
    // Few heads: D of every row first, then blocks of keys (dk, dv), then tiles of queries (dq).
    std::vector<float> d(s.batch * s.heads * s.nq);
    parallel_for(s.batch * s.heads, [&](std::size_t bh, std::size_t) { row_dots(s, bh, out, d_out, &d[bh * s.nq]); });
    const std::size_t key_blocks = (s.nk + keys - 1) / keys, query_tiles = (s.nq + rows - 1) / rows;
    parallel_for(s.batch * s.heads * key_blocks, [&](std::size_t t, std::size_t worker) {
        const std::size_t bh = t / key_blocks, j0 = t % key_blocks * keys, j1 = std::min(s.nk, j0 + keys);
        const HeadView h = head_view(s, bh, q, k, v, d_out, lse, &d[bh * s.nq], dq, dk, dv);
        zero_rows(h.dk + j0 * h.dk_row, j1 - j0, h.dk_row, s.d_head);
        zero_rows(h.dv + j0 * h.dv_row, j1 - j0, h.dv_row, s.d_head);
        PairRun pair(s, bh / s.heads, scale, options, scratch[worker]);
        for (std::size_t i0 = options.causal ? j0 : 0; i0 < s.nq; i0 += rows)
            pair.run(h, i0, std::min(s.nq, i0 + rows), j0, j1, want_dkv);
    });
    parallel_for(s.batch * s.heads * query_tiles, [&](std::size_t t, std::size_t worker) {
        const std::size_t bh = t / query_tiles, i0 = t % query_tiles * rows, i1 = std::min(s.nq, i0 + rows);
        const HeadView h = head_view(s, bh, q, k, v, d_out, lse, &d[bh * s.nq], dq, dk, dv);
        zero_rows(h.dq + i0 * h.dq_row, i1 - i0, h.dq_row, s.d_head);
        PairRun pair(s, bh / s.heads, scale, options, scratch[worker]);
        for (std::size_t j0 = 0; j0 < s.nk && visible(options, i1, j0); j0 += keys)
            pair.run(h, i0, i1, j0, std::min(s.nk, j0 + keys), want_dq);
    });
}

}  // namespace headwise::detail
