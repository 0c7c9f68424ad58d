#include "headwise/fused_attention.hpp"

#include "headwise/blas.hpp"
#include "headwise/parallel.hpp"
#include "headwise/vexp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace headwise::detail {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// With a causal mask, the queries of a tile next to the diagonal go in strips this tall: a strip
// computes only the keys up to its own last query, so of the masked triangle above the diagonal
// only a strip-sized sliver is computed, not a whole tile's.
constexpr std::size_t diagonal_strip = 64;

struct Tile {
    std::size_t b, h, i0, i1;
};

// One worker's scratch, kept from tile to tile.
struct Scratch {
    std::vector<float> scores;  // (rows, keys of one block)
    std::vector<float> acc;     // (rows, d_head): running sum of exp(score - max) * v
    std::vector<float> max;     // (rows): running max of each row's scores
    std::vector<float> sum;     // (rows): running sum of exp(score - max)
};

class TileRun {
public:
    TileRun(const AttentionShape& s, const Tile& t, Strided<const float> q, Strided<const float> k,
            Strided<const float> v, float scale, const AttentionOptions& o, Scratch& w)
        : s_(s), t_(t), scale_(scale), o_(o), w_(w), rows_(t.i1 - t.i0),
          qp_(q.data + t.b * q.batch + t.h * q.head + t.i0 * q.row), q_row_(q.row),
          kp_(k.data + t.b * k.batch + t.h * k.head), k_row_(k.row),
          vp_(v.data + t.b * v.batch + t.h * v.head), v_row_(v.row) {
        w_.acc.assign(rows_ * s.d_head, 0.0f);
        w_.max.assign(rows_, neg_inf);
        w_.sum.assign(rows_, 0.0f);
    }

    // Rows [r0, r1) of the tile against keys [j0, j1): scores, masks, online softmax, times V.
    void block(std::size_t r0, std::size_t r1, std::size_t j0, std::size_t j1, bool causal_mask) {
        const std::size_t n = r1 - r0, len = j1 - j0, d_head = s_.d_head;
        w_.scores.resize(std::max(w_.scores.size(), n * len));
        float* const sc = w_.scores.data();
        // scores (n, len) = q (n, d_head) . k^T (d_head, len) * scale
        blas::gemm(false, true, n, len, d_head, scale_, qp_ + r0 * q_row_, q_row_, kp_ + j0 * k_row_, k_row_, 0.0f, sc,
                   len);
        for (std::size_t r = r0; r < r1; ++r) {
            const std::size_t i = t_.i0 + r;
            float* row = sc + (r - r0) * len;
            if (causal_mask)
                for (std::size_t j = std::max(j0, i + 1); j < j1; ++j) row[j - j0] = neg_inf;
            if (o_.attn_mask != nullptr)
                for (std::size_t j = j0; j < j1; ++j)
                    if ((*o_.attn_mask)(i, j)) row[j - j0] = neg_inf;
            if (o_.key_padding_mask != nullptr)
                for (std::size_t j = j0; j < j1; ++j)
                    if ((*o_.key_padding_mask)(t_.b, j)) row[j - j0] = neg_inf;
            const float old_max = w_.max[r];
            const float new_max = std::max(old_max, row_max(row, len));
            if (new_max == neg_inf) {  // no key of this row seen yet: contributes nothing
                std::fill(row, row + len, 0.0f);
                continue;
            }
            if (new_max != old_max && old_max != neg_inf) {
                // What was summed so far used exp(score - old_max): rescale it to the new max.
                const float alpha = std::exp(old_max - new_max);
                w_.sum[r] *= alpha;
                float* a = w_.acc.data() + r * d_head;
                for (std::size_t c = 0; c < d_head; ++c) a[c] *= alpha;
            }
            w_.max[r] = new_max;
            // row becomes exp(row - max); the division by the sum waits until the very end, where
            // a row is d_head numbers long instead of N_k.
            w_.sum[r] += exp_shifted_sum(row, len, new_max);
        }
        // acc (n, d_head) += exp(scores) (n, len) . v (len, d_head)
        blas::gemm(false, false, n, d_head, len, 1.0f, sc, len, vp_ + j0 * v_row_, v_row_, 1.0f,
                   w_.acc.data() + r0 * d_head, d_head);
    }

    // out rows = acc / sum; a row that saw no key at all (every key masked) is zeros.
    void finish(Strided<float> out) const {
        float* dst = out.data + t_.b * out.batch + t_.h * out.head + t_.i0 * out.row;
        for (std::size_t r = 0; r < rows_; ++r) {
            const float inv = w_.sum[r] > 0.0f ? 1.0f / w_.sum[r] : 0.0f;
            const float* a = w_.acc.data() + r * s_.d_head;
            float* o_row = dst + r * out.row;
            for (std::size_t c = 0; c < s_.d_head; ++c) o_row[c] = a[c] * inv;
        }
    }

    std::size_t rows() const { return rows_; }

private:
    const AttentionShape& s_;
    const Tile& t_;
    float scale_;
    const AttentionOptions& o_;
    Scratch& w_;
    std::size_t rows_;
    const float* qp_;
    std::size_t q_row_;
    const float* kp_;
    std::size_t k_row_;
    const float* vp_;
    std::size_t v_row_;
};

void run_tile(const AttentionShape& s, const Tile& t, Strided<const float> q, Strided<const float> k,
              Strided<const float> v, Strided<float> out, float scale, const AttentionOptions& o, const Tiling& tiling,
              Scratch& scratch) {
    TileRun run(s, t, q, k, v, scale, o, scratch);
    const std::size_t rows = run.rows();
    // Keys this tile can see: with a causal mask, none beyond its last query.
    const std::size_t keys = o.causal ? std::min(s.nk, t.i1) : s.nk;
    for (std::size_t j0 = 0; j0 < keys; j0 += tiling.keys) {
        const std::size_t j1 = std::min(keys, j0 + tiling.keys);
        if (!o.causal || j1 <= t.i0 + 1) {  // every query of the tile sees every key of the block
            run.block(0, rows, j0, j1, false);
            continue;
        }
        // The block reaches past the tile's first query: strip by strip, each up to its last query.
        for (std::size_t r0 = 0; r0 < rows; r0 += diagonal_strip) {
            const std::size_t r1 = std::min(rows, r0 + diagonal_strip);
            const std::size_t last = std::min(j1, t.i0 + r1);  // keys [j0, last) for this strip
            if (last > j0) run.block(r0, r1, j0, last, true);
        }
    }
    run.finish(out);
}

std::size_t rows_per_tile(const AttentionShape& s, const Tiling& tiling) {
    return std::max<std::size_t>(1, std::min(tiling.rows, s.nq));
}

}  // namespace

std::size_t fused_attention_scratch_bytes(const AttentionShape& s, const Tiling& tiling) {
    const std::size_t rows = rows_per_tile(s, tiling), keys = std::max<std::size_t>(1, std::min(tiling.keys, s.nk));
    return worker_count() * (rows * keys + rows * s.d_head + 2 * rows) * sizeof(float);
}

void fused_attention(const AttentionShape& s, Strided<const float> q, Strided<const float> k, Strided<const float> v,
                     Strided<float> out, float scale, const AttentionOptions& options, const Tiling& tiling) {
    const std::size_t rows = rows_per_tile(s, tiling);
    std::vector<Tile> tiles;
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t i0 = 0; i0 < s.nq; i0 += rows) tiles.push_back({b, h, i0, std::min(s.nq, i0 + rows)});
    // Causal tiles near the end of the sequence cost the most: hand those out first.
    if (options.causal)
        std::stable_sort(tiles.begin(), tiles.end(), [](const Tile& a, const Tile& b) { return a.i1 > b.i1; });

    std::vector<Scratch> scratch(worker_count());
    parallel_for(tiles.size(), [&](std::size_t t, std::size_t worker) {
        run_tile(s, tiles[t], q, k, v, out, scale, options, tiling, scratch[worker]);
    });
}

}  // namespace headwise::detail
