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
// the L2 cache. Measured at the issue-8 sizes (docs/performance.md): 256 rows beat 128 and 64.
std::size_t tile_rows(std::size_t nk) {
    constexpr std::size_t scores_floats = 256 * 1024;  // 1 MiB of scores per worker at most
    return std::clamp<std::size_t>(scores_floats / std::max<std::size_t>(nk, 1), 16, 256);
}

// With a causal mask, the queries of a tile next to the diagonal go in strips this tall: a strip
// computes only the keys up to its own last query, so of the masked triangle above the diagonal
// only a strip-sized sliver is computed, not a whole tile's.
constexpr std::size_t diagonal_strip = 64;

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
    scores.resize(rows * keys);  // (rows, keys), row-major
    inv_sums.resize(rows);
    const float* qp = q.data + t.b * q.batch + t.h * q.head + t.i0 * q.row;
    const float* kp = k.data + t.b * k.batch + t.h * k.head;
    const float* vp = v.data + t.b * v.batch + t.h * v.head;

    // Every query of the tile sees keys [0, shared): one rectangle for all rows. Without a mask
    // that is all of them. With a causal mask, keys [shared, seen(strip)) follow strip by strip.
    const std::size_t shared = o.causal ? std::min(keys, t.i0) : keys;
    const std::size_t strip = o.causal ? diagonal_strip : rows;
    auto seen = [&](std::size_t r0) { return o.causal ? std::min(keys, t.i0 + std::min(rows, r0 + strip)) : keys; };

    // scores (rows, keys) = q_tile (rows, d_head) . k^T (d_head, keys) * scale
    if (shared > 0)
        blas::gemm(false, true, rows, shared, s.d_head, scale, qp, q.row, kp, k.row, 0.0f, scores.data(), keys);
    for (std::size_t r0 = 0; r0 < rows; r0 += strip)
        if (seen(r0) > shared)
            blas::gemm(false, true, std::min(rows, r0 + strip) - r0, seen(r0) - shared, s.d_head, scale, qp + r0 * q.row,
                       q.row, kp + shared * k.row, k.row, 0.0f, scores.data() + r0 * keys + shared, keys);

    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t i = t.i0 + r, len = seen(r - r % strip);  // row r's computed keys: [0, len)
        float* row = scores.data() + r * keys;
        if (o.causal)
            for (std::size_t j = i + 1; j < len; ++j) row[j] = neg_inf;
        if (o.attn_mask != nullptr)
            for (std::size_t j = 0; j < len; ++j)
                if ((*o.attn_mask)(i, j)) row[j] = neg_inf;
        if (o.key_padding_mask != nullptr)
            for (std::size_t j = 0; j < len; ++j)
                if ((*o.key_padding_mask)(t.b, j)) row[j] = neg_inf;
        const float m = row_max(row, len);
        if (m == neg_inf) {  // every key masked: zeros, as everywhere in headwise
            std::fill(row, row + len, 0.0f);
            inv_sums[r] = 0.0f;
            continue;
        }
        // row becomes exp(row - m); the division by its sum waits until after the GEMM, where a
        // row is d_head numbers long instead of `keys`.
        inv_sums[r] = 1.0f / exp_shifted_sum(row, len, m);
    }

    // out_tile (rows, d_head) = exp(scores) (rows, keys) . v (keys, d_head), in the same pieces
    if (shared > 0)
        blas::gemm(false, false, rows, s.d_head, shared, 1.0f, scores.data(), keys, vp, v.row, 0.0f, dst, out.row);
    for (std::size_t r0 = 0; r0 < rows; r0 += strip)
        if (seen(r0) > shared)
            blas::gemm(false, false, std::min(rows, r0 + strip) - r0, s.d_head, seen(r0) - shared, 1.0f,
                       scores.data() + r0 * keys + shared, keys, vp + shared * v.row, v.row, shared > 0 ? 1.0f : 0.0f,
                       dst + r0 * out.row, out.row);
    // ... then / each row's sum
    for (std::size_t r = 0; r < rows; ++r) {
        float* o_row = dst + r * out.row;
        const float inv = inv_sums[r];
        for (std::size_t c = 0; c < s.d_head; ++c) o_row[c] *= inv;
    }
}

}  // namespace

void fused_attention(const AttentionShape& s, Strided<const float> q, Strided<const float> k, Strided<const float> v,
                     Strided<float> out, float scale, const AttentionOptions& options) {
    const std::size_t rows = tile_rows(s.nk);
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
