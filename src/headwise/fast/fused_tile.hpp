// headwise/fast/fused_tile.hpp -- one tile of fused attention: a run of queries of one head
// against all the keys it may see, block by block, with an online softmax. fused_attention.cpp
// shares the tiles out; the two ways to run one (BLAS calls, or the register tiles of
// register_tiles.hpp: AVX-512 or AVX2) live in fused_tile.cpp. Internal to headwise::fast.
#pragma once

#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/fused_workspace.hpp"
#include "headwise/fast/register_tiles.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace headwise::fast::detail {

inline constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// Queries [i0, i1) of head h of batch entry b.
struct Tile {
    std::size_t b, h, i0, i1;
};

// Where row i of head (b, h) of x starts (its d_head numbers follow).
template <class T>
T* row_at(Strided<T> x, std::size_t b, std::size_t h, std::size_t i) {
    return x.data + b * x.batch + h * x.head + i * x.row;
}

// Rows [0, n) of x (x_row apart), width floats each, into dst (rows dst_row apart).
inline void copy_rows(const float* x, std::size_t x_row, std::size_t n, std::size_t width, float* dst,
                      std::size_t dst_row) {
    for (std::size_t r = 0; r < n; ++r) std::copy(x + r * x_row, x + r * x_row + width, dst + r * dst_row);
}

// Scores of query i (batch entry b) against keys [j0, j1), in row[0, j1 - j0): those the options
// mask (causal: keys after i; attn_mask; key_padding_mask) become -inf. Returns whether any did.
bool mask_scores(const AttentionOptions& o, std::size_t b, std::size_t i, std::size_t j0, std::size_t j1, float* row);

// Both write the tile's rows of out and, where lse (B, H, N_q) is given, their log-sum-exp.
// The tile with BLAS calls: scores (rows, keys of a block) = q . k^T, then acc += exp(scores) . v.
void run_tile_blas(const AttentionShape& s, const Tile& t, Strided<const float> q, Strided<const float> k,
                   Strided<const float> v, Strided<float> out, float scale, const AttentionOptions& o,
                   const Tiling& tiling, TileScratch& scratch, float* lse);

// The tile with one instruction set's register tiles, on its head's K^T packed by their
// pack_panels (k_panels) and any V (packed or in place).
void run_tile_micro(const RegisterTiles& tiles, const AttentionShape& s, const Tile& t, Strided<const float> q,
                    const float* k_panels, Strided<const float> v, Strided<float> out, float scale,
                    const AttentionOptions& o, const Tiling& tiling, TileScratch& scratch, float* lse);

}  // namespace headwise::fast::detail
