#include "headwise/fast/fused_tile.hpp"

#include "headwise/fast/blas.hpp"
#include "headwise/fast/vexp.hpp"

#include <algorithm>
#include <cmath>

namespace headwise::fast::detail {

namespace {

// With a causal mask, the queries of a tile next to the diagonal go in strips this tall: a strip
// computes only the keys up to its own last query, so of the masked triangle above the diagonal
// only a strip-sized sliver is computed, not a whole tile's.
constexpr std::size_t diagonal_strip = 64;

// A tile's running softmax starts with no key seen: acc 0, max -inf, sum 0 for each of its rows.
void start(TileScratch& scratch, std::size_t rows, std::size_t d_head) {
    scratch.acc.assign(rows * d_head, 0.0f);
    scratch.max.assign(rows, neg_inf);
    scratch.sum.assign(rows, 0.0f);
}

// Row r's online-softmax step over one block of its scores: `block_max` is the block's largest
// (masked scores already -inf), `row` holds `count` scores in `width` floats. What was summed
// under the old max is rescaled to the new one, and the row becomes exp(row - max), its sum
// added; the division by the sum waits until the very end, where a row is d_head numbers long
// instead of N_k. While the row has seen no key it contributes nothing: the row is zeroed and
// the step returns false. `ops` spells the exponentials.
bool online_softmax(const RowOps& ops, TileScratch& scratch, std::size_t r, float* row, std::size_t count,
                    std::size_t width, float block_max, std::size_t d_head) {
    const float old_max = scratch.max[r];
    const float new_max = std::max(old_max, block_max);
    if (new_max == neg_inf) {
        std::fill(row, row + width, 0.0f);
        return false;
    }
    if (new_max != old_max && old_max != neg_inf) {
        const float alpha = std::exp(old_max - new_max);
        scratch.sum[r] *= alpha;
        float* a = scratch.acc.data() + r * d_head;
        for (std::size_t c = 0; c < d_head; ++c) a[c] *= alpha;
    }
    scratch.max[r] = new_max;
    scratch.sum[r] += ops.exp_shifted_sum(row, count, new_max);
    return true;
}

// out rows = acc / sum; a row that saw no key at all (every key masked) is zeros. Where lse
// (B, H, N_q) is asked for, each row's log-sum-exp max + log(sum) goes there (-inf: no key seen).
void normalise(const TileScratch& scratch, const AttentionShape& s, const Tile& t, Strided<float> out, float* lse) {
    const std::size_t d_head = s.d_head;
    if (lse != nullptr)
        for (std::size_t r = 0; r < t.i1 - t.i0; ++r)
            lse[(t.b * s.heads + t.h) * s.nq + t.i0 + r] =
                scratch.sum[r] > 0.0f ? scratch.max[r] + std::log(scratch.sum[r]) : neg_inf;
    float* dst = row_at(out, t.b, t.h, t.i0);
    for (std::size_t r = 0; r < t.i1 - t.i0; ++r) {
        const float inv = scratch.sum[r] > 0.0f ? 1.0f / scratch.sum[r] : 0.0f;
        const float* a = scratch.acc.data() + r * d_head;
        float* o_row = dst + r * out.row;
        for (std::size_t c = 0; c < d_head; ++c) o_row[c] = a[c] * inv;
    }
}

// Rows [r0, r1) of the tile against keys [j0, j1) with two BLAS calls: scores, masks, online
// softmax, times V.
class BlasTile {
public:
    BlasTile(const AttentionShape& s, const Tile& t, Strided<const float> q, Strided<const float> k,
             Strided<const float> v, float scale, const AttentionOptions& o, TileScratch& scratch)
        : s_(s),
          t_(t),
          scale_(scale),
          o_(o),
          scratch_(scratch),
          q_tile_(row_at(q, t.b, t.h, t.i0)),
          q_row_(q.row),
          k_head_(row_at(k, t.b, t.h, 0)),
          k_row_(k.row),
          v_head_(row_at(v, t.b, t.h, 0)),
          v_row_(v.row),
          ops_(row_ops(fast_isa())) {
        start(scratch_, t.i1 - t.i0, s.d_head);
    }

    void block(std::size_t r0, std::size_t r1, std::size_t j0, std::size_t j1) {
        const std::size_t n = r1 - r0, len = j1 - j0, d_head = s_.d_head;
        scratch_.scores.resize(std::max(scratch_.scores.size(), n * len));
        float* const sc = scratch_.scores.data();
        // scores (n, len) = q (n, d_head) . k^T (d_head, len) * scale
        blas::gemm(false, true, n, len, d_head, scale_, q_tile_ + r0 * q_row_, q_row_, k_head_ + j0 * k_row_, k_row_,
                   0.0f, sc, len);
        for (std::size_t r = r0; r < r1; ++r) {
            float* row = sc + (r - r0) * len;
            mask_scores(o_, t_.b, t_.i0 + r, j0, j1, row);
            online_softmax(ops_, scratch_, r, row, len, len, ops_.row_max(row, len), d_head);
        }
        // acc (n, d_head) += exp(scores) (n, len) . v (len, d_head)
        blas::gemm(false, false, n, d_head, len, 1.0f, sc, len, v_head_ + j0 * v_row_, v_row_, 1.0f,
                   scratch_.acc.data() + r0 * d_head, d_head);
    }

private:
    const AttentionShape& s_;
    const Tile& t_;
    float scale_;
    const AttentionOptions& o_;
    TileScratch& scratch_;
    const float* q_tile_;  // the tile's first query row
    std::size_t q_row_;
    const float* k_head_;  // the head's first key row
    std::size_t k_row_;
    const float* v_head_;  // the head's first value row
    std::size_t v_row_;
    const RowOps& ops_;
};

}  // namespace

bool mask_scores(const AttentionOptions& o, std::size_t b, std::size_t i, std::size_t j0, std::size_t j1, float* row) {
    bool masked = false;
    if (o.causal)
        for (std::size_t j = std::max(j0, i + 1); j < j1; ++j) row[j - j0] = neg_inf, masked = true;
    if (o.attn_mask != nullptr)
        for (std::size_t j = j0; j < j1; ++j)
            if ((*o.attn_mask)(i, j)) row[j - j0] = neg_inf, masked = true;
    if (o.key_padding_mask != nullptr)
        for (std::size_t j = j0; j < j1; ++j)
            if ((*o.key_padding_mask)(b, j)) row[j - j0] = neg_inf, masked = true;
    return masked;
}

void run_tile_blas(const AttentionShape& s, const Tile& t, Strided<const float> q, Strided<const float> k,
                   Strided<const float> v, Strided<float> out, float scale, const AttentionOptions& o,
                   const Tiling& tiling, TileScratch& scratch, float* lse) {
    BlasTile run(s, t, q, k, v, scale, o, scratch);
    const std::size_t rows = t.i1 - t.i0;
    // Keys this tile can see: with a causal mask, none beyond its last query.
    const std::size_t keys = o.causal ? std::min(s.nk, t.i1) : s.nk;
    for (std::size_t j0 = 0; j0 < keys; j0 += tiling.keys) {
        const std::size_t j1 = std::min(keys, j0 + tiling.keys);
        if (!o.causal || j1 <= t.i0 + 1) {  // every query of the tile sees every key of the block
            run.block(0, rows, j0, j1);
            continue;
        }
        // The block reaches past the tile's first query: strip by strip, each up to its last query.
        for (std::size_t r0 = 0; r0 < rows; r0 += diagonal_strip) {
            const std::size_t r1 = std::min(rows, r0 + diagonal_strip);
            const std::size_t last = std::min(j1, t.i0 + r1);  // keys [j0, last) for this strip
            if (last > j0) run.block(r0, r1, j0, last);
        }
    }
    normalise(scratch, s, t, out, lse);
}

// For each block of keys, micro-rows of 6 queries each compute their scores, masks and online
// softmax in L1, then add exp(scores) . v into the tile's acc.
void run_tile_micro(const RegisterTiles& tiles, const AttentionShape& s, const Tile& t, Strided<const float> q,
                    const float* k_panels, Strided<const float> v, Strided<float> out, float scale,
                    const AttentionOptions& o, const Tiling& tiling, TileScratch& scratch, float* lse) {
    const std::size_t rows = t.i1 - t.i0, d_head = s.d_head;
    const std::size_t block = round_to_panel(std::max(tiling.keys, panel_keys));
    const std::size_t keys = o.causal ? std::min(s.nk, t.i1) : s.nk;
    const bool other_masks = o.attn_mask != nullptr || o.key_padding_mask != nullptr;
    const RowOps& ops = row_ops(tiles.isa);
    start(scratch, rows, d_head);
    scratch.scores.resize(std::max(scratch.scores.size(), micro_rows * block));
    float* const sc = scratch.scores.data();
    const float* q_tile = row_at(q, t.b, t.h, t.i0);
    const float* v_head = row_at(v, t.b, t.h, 0);
    for (std::size_t j0 = 0; j0 < keys; j0 += block) {
        const std::size_t j1 = std::min(keys, j0 + block);
        for (std::size_t r0 = 0; r0 < rows; r0 += micro_rows) {
            const std::size_t n = std::min(micro_rows, rows - r0);
            // Keys [j0, last) for these queries: with a causal mask, none past the last of them,
            // and each query's own keys end at valid[r] (its position + 1).
            const std::size_t last = o.causal ? std::min(j1, t.i0 + r0 + n) : j1;
            if (last <= j0) continue;
            const std::size_t len = last - j0;
            std::size_t valid[micro_rows];
            for (std::size_t r = 0; r < n; ++r) {
                const std::size_t end = t.i0 + r0 + r + 1;  // causal: this query sees keys [0, end)
                valid[r] = !o.causal ? len : end > j0 ? std::min(len, end - j0) : 0;
            }
            float block_max[micro_rows];
            tiles.scores(n, q_tile + r0 * q.row, q.row, k_panels + j0 * d_head, d_head, len, valid, scale, sc, block,
                         block_max);
            for (std::size_t r = r0; r < r0 + n; ++r) {
                const std::size_t seen = valid[r - r0];
                float* row = sc + (r - r0) * block;
                float row_best = block_max[r - r0];
                // The kernel's max may be a masked score: then take it again.
                if (other_masks && mask_scores(o, t.b, t.i0 + r, j0, j0 + seen, row))
                    row_best = seen > 0 ? ops.row_max(row, seen) : neg_inf;
                if (!online_softmax(ops, scratch, r, row, seen, len, row_best, d_head)) continue;  // no key seen yet
                std::fill(row + seen, row + len, 0.0f);  // keys after this query (causal): weight 0
            }
            tiles.pv(n, sc, block, v_head + j0 * v.row, v.row, len, scratch.acc.data() + r0 * d_head, d_head, d_head);
        }
    }
    normalise(scratch, s, t, out, lse);
}

}  // namespace headwise::fast::detail
