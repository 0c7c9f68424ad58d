#include "headwise/fused_attention.hpp"

#include "headwise/blas.hpp"
#include "headwise/parallel.hpp"
#include "headwise/vexp.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace headwise::detail {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// Queries per tile. Bigger tiles mean fewer and larger GEMMs (K and V are packed once per tile
// instead of once per 64 queries), but a tile's scores (rows x N_k floats) should stay within
// the L2 cache, and a causal tile computes a rows x rows triangle above the diagonal for
// nothing. Measured at the issue-8 sizes (docs/performance.md): without a mask 256 rows beat 128
// and 64; with causal, 128 beat both.
std::size_t tile_rows(std::size_t nk, bool causal) {
    constexpr std::size_t scores_floats = 256 * 1024;  // 1 MiB of scores per worker at most
    const std::size_t most = causal ? 128 : 256;
    return std::clamp<std::size_t>(scores_floats / std::max<std::size_t>(nk, 1), 16, most);
}

struct Tile {
    std::size_t b, h, i0, i1;
};

void run_tile(const AttentionShape& s, const Tile& t, Strided<const float> q, Strided<const float> k,
              Strided<const float> v, Strided<float> out, float scale, const AttentionOptions& o,
              std::vector<float>& scores, std::vector<float>& inv_sums) {
    const std::size_t rows = t.i1 - t.i0;
    // Keys this tile can see: with a causal mask, none beyond its last query.
    const std::size_t keys = o.causal ? std::min(s.nk, t.i1) : s.nk;
    float* dst = out.data + t.b * out.batch + t.h * out.head + t.i0 * out.row;
    if (keys == 0) {
        for (std::size_t i = 0; i < rows; ++i) std::fill(dst + i * out.row, dst + i * out.row + s.d_head, 0.0f);
        return;
    }
    scores.resize(rows * keys);
    inv_sums.resize(rows);
    const float* qp = q.data + t.b * q.batch + t.h * q.head + t.i0 * q.row;
    const float* kp = k.data + t.b * k.batch + t.h * k.head;
    const float* vp = v.data + t.b * v.batch + t.h * v.head;
    // scores (rows, keys) = q_tile (rows, d_head) . k^T (d_head, keys) * scale
    blas::gemm(false, true, rows, keys, s.d_head, scale, qp, q.row, kp, k.row, 0.0f, scores.data(), keys);

    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t i = t.i0 + r;
        float* row = scores.data() + r * keys;
        if (o.causal)
            for (std::size_t j = i + 1; j < keys; ++j) row[j] = neg_inf;
        if (o.attn_mask != nullptr)
            for (std::size_t j = 0; j < keys; ++j)
                if ((*o.attn_mask)(i, j)) row[j] = neg_inf;
        if (o.key_padding_mask != nullptr)
            for (std::size_t j = 0; j < keys; ++j)
                if ((*o.key_padding_mask)(t.b, j)) row[j] = neg_inf;
        const float m = row_max(row, keys);
        if (m == neg_inf) {  // every key masked: zeros, as everywhere in headwise
            std::fill(row, row + keys, 0.0f);
            inv_sums[r] = 0.0f;
            continue;
        }
        // row becomes exp(row - m); the division by its sum waits until after the GEMM, where a
        // row is d_head numbers long instead of `keys`.
        inv_sums[r] = 1.0f / exp_shifted_sum(row, keys, m);
    }
    // out_tile (rows, d_head) = exp(scores) (rows, keys) . v (keys, d_head), then / each row's sum
    blas::gemm(false, false, rows, s.d_head, keys, 1.0f, scores.data(), keys, vp, v.row, 0.0f, dst, out.row);
    for (std::size_t r = 0; r < rows; ++r) {
        float* o_row = dst + r * out.row;
        const float inv = inv_sums[r];
        for (std::size_t c = 0; c < s.d_head; ++c) o_row[c] *= inv;
    }
}

}  // namespace

void fused_attention(const AttentionShape& s, Strided<const float> q, Strided<const float> k, Strided<const float> v,
                     Strided<float> out, float scale, const AttentionOptions& options) {
    const std::size_t rows = tile_rows(s.nk, options.causal);
    std::vector<Tile> tiles;
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t i0 = 0; i0 < s.nq; i0 += rows) tiles.push_back({b, h, i0, std::min(s.nq, i0 + rows)});
    // Causal tiles near the end of the sequence cost the most: hand those out first.
    if (options.causal)
        std::stable_sort(tiles.begin(), tiles.end(), [](const Tile& a, const Tile& b) { return a.i1 > b.i1; });

    // Each worker keeps its scratch rows from tile to tile.
    std::vector<std::vector<float>> scores(worker_count()), inv_sums(worker_count());
    parallel_for(tiles.size(), [&](std::size_t t, std::size_t worker) {
        run_tile(s, tiles[t], q, k, v, out, scale, options, scores[worker], inv_sums[worker]);
    });
}

}  // namespace headwise::detail
