#include "headwise/fast/fused_backward.hpp"

#include "headwise/fast/blas.hpp"
#include "headwise/fast/fused_tile.hpp"
#include "headwise/fast/fused_workspace.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/fast/vexp.hpp"

#include <algorithm>
#include <vector>

namespace headwise::fast {

using namespace detail;  // fast's private tile code (fused_tile.hpp, register_tiles.hpp)

namespace {

// One (batch, head)'s operands: row n of x is x.data + n * x.row.
struct HeadView {
    const float *q, *k, *v, *d_out, *lse, *delta;  // lse and delta: (N_q), one per query
    float *dq, *dk, *dv;
    std::size_t q_row, k_row, v_row, o_row, dq_row, dk_row, dv_row;
    std::size_t dkv_from = 0;  // dk's and dv's first rows are key dkv_from's
    const float* p = nullptr;  // the stored weights (N_q, N_k), or null: recomputed from lse

    float* dk_at(std::size_t j) const { return dk + (j - dkv_from) * dk_row; }
    float* dv_at(std::size_t j) const { return dv + (j - dkv_from) * dv_row; }
};

// Which gradients a pair of (query tile, key block) adds to.
enum Wants : unsigned { want_dq = 1, want_dkv = 2 };

// One core's tiles, kept from pair to pair.
struct BackwardScratch {
    std::vector<float> p;      // (rows, keys): P, then dS
    std::vector<float> dp;     // (rows, keys): dP
    std::vector<float> delta;  // (N_q): the head in hand's delta = rowsum(dO o O) (per-head tasks only)
    // The micro-kernels': P^T and dS^T (keys, rows); the key block's K^T and V^T in panels of 32 and
    // its K, packed once for the pairs that share the block (packed_k names it); the query tile's q
    // and d_out (packed_q names it). Rows in place are 3 d_model floats apart in the layer, a stride
    // that maps every row to the same few L1 sets; packed, they are d_head apart.
    std::vector<float> pt, dst, kt, vt, kc, qc, oc;
    // With one head per core, the key block's dk and dv and the head's dq (qc holds the whole head):
    // summed here d_head apart and written out once. In place their rows are 3 d_model floats apart
    // in the layer, and the kernels' first load of each missed the cache.
    std::vector<float> dk_block, dv_block, dq_head;
    const float* packed_k = nullptr;
    const float* packed_q = nullptr;
};

// dp[j] = p[j] (dp[j] - delta) scale: dS from the stored weights, as softmax_backward_row_avx512 makes
// it after the exp.
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) void softmax_backward_from_p(
    const float* p, float* dp, std::size_t n, float delta, float scale) {
    for (std::size_t j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - delta) * scale;
}

class PairRun {
public:
    // tiles: the register tiles to run, or nullptr for BLAS calls.
    PairRun(const AttentionShape& s, std::size_t b, float scale, const AttentionOptions& o, const RegisterTiles* tiles,
            BackwardScratch& w)
        : s_(s), b_(b), scale_(scale), o_(o), tiles_(tiles), w_(w) {}

    // Queries [i0, i1) against keys [j0, j1) of head h.
    void run(const HeadView& h, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, unsigned wants) {
        if (tiles_ != nullptr)
            run_micro(h, i0, i1, j0, j1, wants);
        else
            run_blas(h, i0, i1, j0, j1, wants);
    }

private:
    // Each product a BLAS call (any CPU, any d_head); tiles (rows, keys) apart by keys.
    void run_blas(const HeadView& h, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, unsigned wants) {
        const std::size_t n = i1 - i0, len = j1 - j0, dh = s_.d_head;
        float* const p = w_.p.data();
        float* const dp = w_.dp.data();
        if (h.p) {  // P (n, len) read from the stored weights
            copy_rows(h.p + i0 * s_.nk + j0, s_.nk, n, len, p, len);
        } else {
            // S (n, len) = scale q (n, d_head) . k^T (d_head, len)
            blas::gemm(false, true, n, len, dh, scale_, h.q + i0 * h.q_row, h.q_row, h.k + j0 * h.k_row, h.k_row, 0.0f,
                       p, len);
            // P = exp(S - L), masked keys 0 (and a row that saw no key, L = -inf, all 0)
            for (std::size_t r = 0; r < n; ++r) mask_scores(o_, b_, i0 + r, j0, j1, p + r * len);
            exp_shifted_rows(p, n, len, h.lse + i0);
        }
        // dv (len, d_head) += P^T (len, n) . d_out (n, d_head)
        if (wants & want_dkv)
            blas::gemm(true, false, len, dh, n, 1.0f, p, len, h.d_out + i0 * h.o_row, h.o_row, 1.0f, h.dv_at(j0),
                       h.dv_row);
        // dP (n, len) = d_out (n, d_head) . v^T (d_head, len)
        blas::gemm(false, true, n, len, dh, 1.0f, h.d_out + i0 * h.o_row, h.o_row, h.v + j0 * h.v_row, h.v_row, 0.0f,
                   dp, len);
        // dS = P o (dP - D) * scale, over P's storage
        for (std::size_t r = 0; r < n; ++r) {
            float* row = p + r * len;
            const float* dp_row = dp + r * len;
            const float delta = h.delta[i0 + r];
            for (std::size_t j = 0; j < len; ++j) row[j] = row[j] * (dp_row[j] - delta) * scale_;
        }
        // dq (n, d_head) += dS (n, len) . k (len, d_head)
        if (wants & want_dq)
            blas::gemm(false, false, n, dh, len, 1.0f, p, len, h.k + j0 * h.k_row, h.k_row, 1.0f, h.dq + i0 * h.dq_row,
                       h.dq_row);
        // dk (len, d_head) += dS^T (len, n) . q (n, d_head)
        if (wants & want_dkv)
            blas::gemm(true, false, len, dh, n, 1.0f, p, len, h.q + i0 * h.q_row, h.q_row, 1.0f, h.dk_at(j0), h.dk_row);
    }

    // The register tiles of register_tiles.hpp (AVX-512 or AVX2), on the key block's K^T and V^T
    // packed once, and the tiles transposed in registers for dv and dk: no BLAS call packs an
    // operand per pair. Rows are `ls` apart (keys rounded up to 32, a whole number of panels). With a causal mask each group of 6 queries computes only the keys up to its
    // last one, and each group of 6 keys adds only the queries that see it.
    void run_micro(const HeadView& h, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, unsigned wants) {
        const std::size_t n = i1 - i0, len = j1 - j0, dh = s_.d_head, ls = round_to_panel(len);
        pack_block(h, j0, len);
        const std::size_t at = pack_queries(h, i0, n);
        const float* const q = w_.qc.data() + at;  // query i0 + r at q + r * dh
        const float* const d_out = w_.oc.data() + at;
        float* const p = w_.p.data();
        float* const dp = w_.dp.data();
        for (std::size_t r0 = 0; r0 < n; r0 += micro_rows) {
            const std::size_t rows = std::min(micro_rows, n - r0);
            const std::size_t seen = seen_keys(i0 + r0 + rows, j0, len);  // keys [j0, j0 + seen) for these rows
            if (seen > 0) {
                std::size_t valid[micro_rows];
                std::fill(valid, valid + micro_rows, seen);
                float ignored[micro_rows];
                // S (rows, seen) = scale q . K^T (a stored P is read in backward_row) and dP = d_out . V^T
                if (!h.p)
                    tiles_->scores(rows, q + r0 * dh, dh, w_.kt.data(), dh, seen, valid, scale_, p + r0 * ls, ls,
                                   ignored);
                tiles_->scores(rows, d_out + r0 * dh, dh, w_.vt.data(), dh, seen, valid, 1.0f, dp + r0 * ls, ls,
                               ignored);
            }
            for (std::size_t r = r0; r < r0 + rows; ++r)
                backward_row(h, i0 + r, j0, seen, p + r * ls, dp + r * ls, len);
            // dq (rows, d_head) += dS (rows, seen) . k (seen, d_head)
            if ((wants & want_dq) && seen > 0)
                tiles_->pv(rows, dp + r0 * ls, ls, w_.kc.data(), dh, seen, h.dq + (i0 + r0) * h.dq_row, dh, h.dq_row);
        }
        if (wants & want_dkv) add_dkv(h, i0, n, j0, len, ls, at);
    }

    // One row of P (from S) and dS (from dP) over the keys it computed, zeros up to len.
    void backward_row(const HeadView& h, std::size_t i, std::size_t j0, std::size_t seen, float* row, float* dp_row,
                      std::size_t len) const {
        if (seen > 0 && h.p) {
            std::copy_n(h.p + i * s_.nk + j0, seen, row);  // P, stored
            softmax_backward_from_p(row, dp_row, seen, h.delta[i], scale_);
        } else if (seen > 0) {
            mask_scores(o_, b_, i, j0, j0 + seen, row);
            row_ops(tiles_->isa)
                .softmax_backward_row(row, dp_row, seen, h.lse[i], h.delta[i], scale_);  // P, masked 0; dS
        }
        std::fill(row + seen, row + len, 0.0f);
        std::fill(dp_row + seen, dp_row + len, 0.0f);
    }

    // dv (len, d_head) += P^T (len, n) . d_out (n, d_head) and dk += dS^T . q, 6 keys at a time.
    void add_dkv(const HeadView& h, std::size_t i0, std::size_t n, std::size_t j0, std::size_t len, std::size_t ls,
                 std::size_t at) {
        const std::size_t nt = (n + 15) / 16 * 16, dh = s_.d_head;  // P^T's rows are nt apart
        tiles_->transpose(w_.p.data(), ls, n, len, w_.pt.data(), nt);
        tiles_->transpose(w_.dp.data(), ls, n, len, w_.dst.data(), nt);
        for (std::size_t c0 = 0; c0 < len; c0 += micro_rows) {
            const std::size_t keys = std::min(micro_rows, len - c0);
            const std::size_t first = first_query(i0, j0 + c0);  // queries before it see none of these keys
            if (first >= n) continue;
            tiles_->pv(keys, w_.pt.data() + c0 * nt + first, nt, w_.oc.data() + at + first * dh, dh, n - first,
                       h.dv_at(j0 + c0), dh, h.dv_row);
            tiles_->pv(keys, w_.dst.data() + c0 * nt + first, nt, w_.qc.data() + at + first * dh, dh, n - first,
                       h.dk_at(j0 + c0), dh, h.dk_row);
        }
    }

    // Keys [j0, j0 + len) of h as K^T and V^T panels, unless they are the ones packed last.
    void pack_block(const HeadView& h, std::size_t j0, std::size_t len) {
        const float* const first = h.k + j0 * h.k_row;
        if (w_.packed_k == first) return;
        tiles_->pack_panels(first, h.k_row, len, s_.d_head, w_.kt.data());
        tiles_->pack_panels(h.v + j0 * h.v_row, h.v_row, len, s_.d_head, w_.vt.data());
        copy_rows(first, h.k_row, len, s_.d_head, w_.kc.data(), s_.d_head);
        w_.packed_k = first;
    }

    // Queries [i0, i0 + n) of h: their q and d_out d_head apart, unless packed already. The whole
    // head's at once where the scratch holds them (one head per core and N_q small: each tile would
    // otherwise be copied again for every block of keys); else the tile's. Returns where query i0's
    // row is in qc and oc.
    std::size_t pack_queries(const HeadView& h, std::size_t i0, std::size_t n) {
        const bool whole = w_.qc.size() >= s_.nq * s_.d_head;
        const std::size_t from = whole ? 0 : i0, count = whole ? s_.nq : n;
        const float* const first = h.q + from * h.q_row;
        if (w_.packed_q != first) {
            copy_rows(first, h.q_row, count, s_.d_head, w_.qc.data(), s_.d_head);
            copy_rows(h.d_out + from * h.o_row, h.o_row, count, s_.d_head, w_.oc.data(), s_.d_head);
            w_.packed_q = first;
        }
        return (i0 - from) * s_.d_head;
    }

    // Of keys [j0, j0 + len), how many the queries before `end` may see: with a causal mask, those
    // up to query end - 1.
    std::size_t seen_keys(std::size_t end, std::size_t j0, std::size_t len) const {
        if (!o_.causal) return len;
        return end > j0 ? std::min(len, end - j0) : 0;
    }

    // The first query of a tile from i0 that may see key j: with a causal mask, query j.
    std::size_t first_query(std::size_t i0, std::size_t j) const { return o_.causal && j > i0 ? j - i0 : 0; }

    const AttentionShape& s_;
    std::size_t b_;
    float scale_;
    const AttentionOptions& o_;
    const RegisterTiles* tiles_;
    BackwardScratch& w_;
};

// Where the weights come from: the forward's log-sum-exp (B, H, N_q), or the stored P (B, H, N_q, N_k).
struct Weights {
    const float* lse;
    const float* p;
};

HeadView head_view(const AttentionShape& s, std::size_t bh, Strided<const float> q, Strided<const float> k,
                   Strided<const float> v, Strided<const float> d_out, Weights weights, const float* delta,
                   Strided<float> dq, Strided<float> dk, Strided<float> dv) {
    const std::size_t b = bh / s.heads, h = bh % s.heads;
    auto at = [&](auto x) { return x.data + b * x.batch + h * x.head; };
    const float* lse = weights.lse ? weights.lse + bh * s.nq : nullptr;
    HeadView view{at(q),  at(k), at(v), at(d_out), lse,       delta,  at(dq), at(dk),
                  at(dv), q.row, k.row, v.row,     d_out.row, dq.row, dk.row, dv.row};
    if (weights.p) view.p = weights.p + bh * s.nq * s.nk;
    return view;
}

// delta_i = sum_c d_out_ic out_ic (rowsum(dO o O), the papers' D_i) for the N_q rows of head bh.
void row_dots(const AttentionShape& s, std::size_t bh, Strided<const float> out, Strided<const float> d_out,
              float* delta) {
    const std::size_t b = bh / s.heads, h = bh % s.heads;
    const float* o = out.data + b * out.batch + h * out.head;
    const float* g = d_out.data + b * d_out.batch + h * d_out.head;
    for (std::size_t i = 0; i < s.nq; ++i) {
        float sum = 0.0f;
        for (std::size_t c = 0; c < s.d_head; ++c) sum += o[i * out.row + c] * g[i * d_out.row + c];
        delta[i] = sum;
    }
}

void zero_rows(float* x, std::size_t rows, std::size_t row, std::size_t width) {
    for (std::size_t r = 0; r < rows; ++r) std::fill(x + r * row, x + r * row + width, 0.0f);
}

// With a causal mask, queries [i0, i1) see none of keys [j0, ...) when i1 <= j0.
bool visible(const AttentionOptions& o, std::size_t i1, std::size_t j0) { return !o.causal || j0 < i1; }

// h with its dq, dk and dv in w's scratch, d_head apart.
HeadView in_scratch(HeadView h, std::size_t d_head, BackwardScratch& w) {
    h.dq = w.dq_head.data(), h.dk = w.dk_block.data(), h.dv = w.dv_block.data();
    h.dq_row = h.dk_row = h.dv_row = d_head;
    return h;
}

bool per_head(const AttentionShape& s, const BackwardTiling& tiling) {
    if (tiling.split != BackwardSplit::automatic) return tiling.split == BackwardSplit::heads;
    return s.batch * s.heads >= 2 * worker_count();
}

// The tile sizes a call uses: the micro-kernels take keys in whole panels of 32.
struct BackwardSizes {
    const RegisterTiles* tiles;        // the register tiles, or nullptr: BLAS calls
    bool micro;                        // tiles != nullptr
    std::size_t rows, keys;            // per tile and block, as asked
    std::size_t tile_rows, tile_keys;  // a tile's storage: rows, and keys (ls apart)
    std::size_t query_rows;            // the micro-kernels' packed q and d_out: a tile's, or a whole head's
    bool whole_head;                   // the micro-kernels, one head per core, query_rows = N_q
};

// A whole head's q and d_out are packed at once, one head per core, up to 256 KiB each.
constexpr std::size_t whole_head_floats = 65536;

BackwardSizes sizes_of(const AttentionShape& s, const BackwardTiling& tiling) {
    const RegisterTiles* const tiles = register_tiles(resolve_kernel(tiling.kernel, s.d_head));
    const bool micro = tiles != nullptr;
    const std::size_t rows = std::max<std::size_t>(1, tiling.rows);
    const std::size_t keys =
        micro ? round_to_panel(std::max<std::size_t>(1, tiling.keys)) : std::max<std::size_t>(1, tiling.keys);
    const std::size_t tile_rows = std::min(rows, s.nq);
    const std::size_t tile_keys = micro ? round_to_panel(std::min(keys, s.nk)) : std::min(keys, s.nk);
    const bool whole = per_head(s, tiling) && s.nq * s.d_head <= whole_head_floats;
    return {tiles, micro, rows, keys, tile_rows, tile_keys, micro && whole ? s.nq : tile_rows, micro && whole};
}

// Floats of each of one core's buffers: P and dP; for the micro-kernels also P^T and dS^T, the key
// block's K^T, V^T and K, q and d_out; with the whole head packed, dk, dv and dq too.
struct ScratchFloats {
    std::size_t tile = 0, transposed = 0, block = 0, queries = 0, sums = 0;

    ScratchFloats(const AttentionShape& s, const BackwardSizes& z) : tile(z.tile_rows * z.tile_keys) {
        if (!z.micro) return;
        transposed = z.tile_keys * ((z.tile_rows + 15) / 16 * 16);
        block = z.tile_keys * s.d_head;
        queries = z.query_rows * s.d_head;
        sums = z.whole_head ? block : 0;
    }
    // P, dP; P^T, dS^T; K^T, V^T, K; q, d_out; dk, dv, dq.
    std::size_t total() const {
        return 2 * tile + 2 * transposed + 3 * block + 2 * queries + 2 * sums + (sums ? queries : 0);
    }
};

// Each core's buffers at their largest from the start (grown pair by pair, a vector would hold its
// old and new blocks at once).
std::vector<BackwardScratch> scratch_for(const AttentionShape& s, const BackwardSizes& z) {
    const ScratchFloats f(s, z);
    std::vector<BackwardScratch> scratch(worker_count());
    for (BackwardScratch& w : scratch) {
        w.p.resize(f.tile), w.dp.resize(f.tile);
        w.pt.resize(f.transposed), w.dst.resize(f.transposed);
        w.kt.resize(f.block), w.vt.resize(f.block), w.kc.resize(f.block);
        w.qc.resize(f.queries), w.oc.resize(f.queries);
        w.dk_block.resize(f.sums), w.dv_block.resize(f.sums), w.dq_head.resize(f.sums ? f.queries : 0);
    }
    return scratch;
}

// One head, one core: every pair of its query tiles and key blocks. With the whole head packed the
// pairs add into the scratch (a key block's dk and dv, the head's dq), written out once.
void backward_head(const AttentionShape& s, const BackwardSizes& z, const AttentionOptions& options, const HeadView& h,
                   PairRun& pair, BackwardScratch& w) {
    HeadView sums = z.whole_head ? in_scratch(h, s.d_head, w) : h;  // where the pairs add
    zero_rows(sums.dq, s.nq, sums.dq_row, s.d_head);
    if (!z.whole_head) zero_rows(h.dk, s.nk, h.dk_row, s.d_head), zero_rows(h.dv, s.nk, h.dv_row, s.d_head);
    for (std::size_t j0 = 0; j0 < s.nk; j0 += z.keys) {
        const std::size_t j1 = std::min(s.nk, j0 + z.keys);
        if (z.whole_head) {  // this block's dk and dv from row 0 of the scratch
            sums.dkv_from = j0;
            zero_rows(sums.dk, j1 - j0, s.d_head, s.d_head), zero_rows(sums.dv, j1 - j0, s.d_head, s.d_head);
        }
        for (std::size_t i0 = options.causal ? j0 / z.rows * z.rows : 0; i0 < s.nq; i0 += z.rows)
            if (visible(options, std::min(s.nq, i0 + z.rows), j0))
                pair.run(sums, i0, std::min(s.nq, i0 + z.rows), j0, j1, want_dq | want_dkv);
        if (z.whole_head) {
            copy_rows(sums.dk, s.d_head, j1 - j0, s.d_head, h.dk_at(j0), h.dk_row);
            copy_rows(sums.dv, s.d_head, j1 - j0, s.d_head, h.dv_at(j0), h.dv_row);
        }
    }
    if (z.whole_head) copy_rows(sums.dq, s.d_head, s.nq, s.d_head, h.dq, h.dq_row);
}

}  // namespace

bool backward_writes_in_place(const AttentionShape& s, const BackwardTiling& tiling) {
    return sizes_of(s, tiling).whole_head;  // backward_head: q packed whole, k and v block by block
}

std::size_t fused_attention_backward_scratch_bytes(const AttentionShape& s, const BackwardTiling& tiling) {
    const std::size_t per_core = ScratchFloats(s, sizes_of(s, tiling)).total();
    const std::size_t deltas = per_head(s, tiling) ? s.nq * worker_count() : s.batch * s.heads * s.nq;
    return (per_core * worker_count() + deltas) * sizeof(float);
}

namespace {

// Both backwards: the weights recomputed from lse, or read from the stored P.
void backward(const AttentionShape& s, Strided<const float> q, Strided<const float> k, Strided<const float> v,
              Strided<const float> out, Strided<const float> d_out, Weights weights, Strided<float> dq,
              Strided<float> dk, Strided<float> dv, float scale, const AttentionOptions& options,
              const BackwardTiling& tiling) {
    const BackwardSizes z = sizes_of(s, tiling);
    const std::size_t rows = z.rows, keys = z.keys;
    std::vector<BackwardScratch> scratch = scratch_for(s, z);
    if (per_head(s, tiling)) {  // one head per task: its dq, dk and dv are this core's alone
        parallel_for(s.batch * s.heads, [&](std::size_t bh, std::size_t worker) {
            BackwardScratch& w = scratch[worker];
            w.delta.resize(s.nq);
            row_dots(s, bh, out, d_out, w.delta.data());
            PairRun pair(s, bh / s.heads, scale, options, z.tiles, w);
            backward_head(s, z, options, head_view(s, bh, q, k, v, d_out, weights, w.delta.data(), dq, dk, dv), pair,
                          w);
        });
        return;
    }
    // Few heads: D of every row first, then blocks of keys (dk, dv), then tiles of queries (dq).
    std::vector<float> delta(s.batch * s.heads * s.nq);
    parallel_for(s.batch * s.heads,
                 [&](std::size_t bh, std::size_t) { row_dots(s, bh, out, d_out, &delta[bh * s.nq]); });
    const std::size_t key_blocks = (s.nk + keys - 1) / keys, query_tiles = (s.nq + rows - 1) / rows;
    parallel_for(s.batch * s.heads * key_blocks, [&](std::size_t t, std::size_t worker) {
        const std::size_t bh = t / key_blocks, j0 = t % key_blocks * keys, j1 = std::min(s.nk, j0 + keys);
        const HeadView h = head_view(s, bh, q, k, v, d_out, weights, &delta[bh * s.nq], dq, dk, dv);
        zero_rows(h.dk + j0 * h.dk_row, j1 - j0, h.dk_row, s.d_head);
        zero_rows(h.dv + j0 * h.dv_row, j1 - j0, h.dv_row, s.d_head);
        PairRun pair(s, bh / s.heads, scale, options, z.tiles, scratch[worker]);
        for (std::size_t i0 = options.causal ? j0 : 0; i0 < s.nq; i0 += rows)
            pair.run(h, i0, std::min(s.nq, i0 + rows), j0, j1, want_dkv);
    });
    parallel_for(s.batch * s.heads * query_tiles, [&](std::size_t t, std::size_t worker) {
        const std::size_t bh = t / query_tiles, i0 = t % query_tiles * rows, i1 = std::min(s.nq, i0 + rows);
        const HeadView h = head_view(s, bh, q, k, v, d_out, weights, &delta[bh * s.nq], dq, dk, dv);
        zero_rows(h.dq + i0 * h.dq_row, i1 - i0, h.dq_row, s.d_head);
        PairRun pair(s, bh / s.heads, scale, options, z.tiles, scratch[worker]);
        for (std::size_t j0 = 0; j0 < s.nk && visible(options, i1, j0); j0 += keys)
            pair.run(h, i0, i1, j0, std::min(s.nk, j0 + keys), want_dq);
    });
}

}  // namespace

void fused_attention_backward(const AttentionShape& s, Strided<const float> q, Strided<const float> k,
                              Strided<const float> v, Strided<const float> out, Strided<const float> d_out,
                              const float* lse, Strided<float> dq, Strided<float> dk, Strided<float> dv, float scale,
                              const AttentionOptions& options, const BackwardTiling& tiling) {
    backward(s, q, k, v, out, d_out, {lse, nullptr}, dq, dk, dv, scale, options, tiling);
}

void fused_attention_backward_stored_p(const AttentionShape& s, Strided<const float> q, Strided<const float> k,
                                       Strided<const float> v, Strided<const float> out, Strided<const float> d_out,
                                       const float* p, Strided<float> dq, Strided<float> dk, Strided<float> dv,
                                       float scale, const AttentionOptions& options, const BackwardTiling& tiling) {
    backward(s, q, k, v, out, d_out, {nullptr, p}, dq, dk, dv, scale, options, tiling);
}

}  // namespace headwise::fast
