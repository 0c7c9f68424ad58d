// headwise/fast/register_tiles.hpp -- the register tiles of one instruction set, as the fused
// forward (fused_tile.cpp) and backward (fused_backward.cpp) call them.
//
// BLAS packs both operands of every call: for a tile of queries against a block of keys that is
// the block of K (again for every tile of the same head) and the tile's exp(scores). The register
// tiles instead read K^T packed once per head, in panels of 32 keys (pack_panels), and the other
// operands where they lie. Two spellings fill this table: AVX-512 (avx512_kernels.hpp: 16-float
// vectors, 32 registers; d_head a multiple of 16) and AVX2 with FMA (avx2_kernels.hpp: 8-float
// vectors, 16 registers; d_head a multiple of 8). Both take 6 queries at a time and the same
// packed layout, so the code that calls them does not know which runs. Internal to headwise::fast.
#pragma once

#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/fused_workspace.hpp"
#include "headwise/fast/isa.hpp"

#include <algorithm>
#include <cstddef>

namespace headwise::fast::detail {

// Queries per register tile, in every spelling.
inline constexpr std::size_t micro_rows = 6;

struct RegisterTiles {
    Kernel kernel;                // the Kernel value that names these tiles
    Isa isa;                      // their exponentials and row maxima: row_ops(isa) (vexp.hpp)
    std::size_t d_head_multiple;  // they run when d_head is a multiple of this

    // s (rows, len rounded up to the vector width; ls apart) = scale * q (rows, q_row apart) . K^T for
    // rows <= micro_rows queries and len keys of k_panels (pack_panels' layout, from the block's first
    // key). Row r's largest score among its first valid[r] (at most len: with a causal mask, the keys
    // up to its own query) goes to row_max_out[r] on the way, so no second pass looks for it.
    void (*scores)(std::size_t rows, const float* q, std::size_t q_row, const float* k_panels, std::size_t d_head,
                   std::size_t len, const std::size_t* valid, float scale, float* s, std::size_t ls,
                   float* row_max_out);

    // acc (rows, d_head; acc_ld apart) += p (rows, len; ls apart) . v (len rows, v_row apart), rows <= micro_rows.
    void (*pv)(std::size_t rows, const float* p, std::size_t ls, const float* v, std::size_t v_row, std::size_t len,
               float* acc, std::size_t d_head, std::size_t acc_ld);

    // out (cols rounded up to 16, rows rounded up to 16; ldo apart) = in (rows, cols; ld apart)
    // transposed; in's columns up to cols rounded up to 16 are read (ld must reach them), and out's
    // columns past `rows` are zeros.
    void (*transpose)(const float* in, std::size_t ld, std::size_t rows, std::size_t cols, float* out, std::size_t ldo);

    // Rows [0, n) of x (x_row apart, d_head wide) as K^T panels of panel_keys, each (d_head, 32)
    // contiguous, zero-padded to n rounded up to a panel: into dst (d_head * round_to_panel(n) floats).
    void (*pack_panels)(const float* x, std::size_t x_row, std::size_t n, std::size_t d_head, float* dst);
};

// The tiles a kernel names: nullptr for Kernel::blas (and automatic, which is not a kernel yet).
const RegisterTiles* register_tiles(Kernel kernel);

// What both spellings share.

// tile.template operator()<R>() with R = rows (1 <= rows <= micro_rows): a register tile is compiled
// for each row count, since its accumulators must be named at compile time.
template <std::size_t R = micro_rows, class Tile>
void with_rows(std::size_t rows, const Tile& tile) {
    if constexpr (R > 1) {
        if (rows < R) return with_rows<R - 1>(rows, tile);
    }
    tile.template operator()<R>();
}

// The table of a spelling S, which gives
//   S::scores<R>, S::pv<R>: exactly R rows (the scores, and acc += p . v across all of d_head);
//   S::transpose_block(in, ld, rows, out, ldo): out (B, B; ldo apart) = the first B columns of in's
//   `rows` rows (ld apart) transposed, zeros past them (with rows 0, in is not read), B = S::block
//   (8 or 16);
// and the table's transpose and pack_panels are built from its blocks.
template <class S>
constexpr RegisterTiles tiles_of(Kernel kernel, Isa isa, std::size_t d_head_multiple) {
    static_assert(16 % S::block == 0 && panel_keys % S::block == 0, "blocks tile 16 x 16 squares and whole panels");
    return {kernel, isa, d_head_multiple,
            [](std::size_t rows, const float* q, std::size_t q_row, const float* k_panels, std::size_t d_head,
               std::size_t len, const std::size_t* valid, float scale, float* s, std::size_t ls, float* row_max_out) {
                with_rows(rows, [&]<std::size_t R>() {
                    S::template scores<R>(q, q_row, k_panels, d_head, len, valid, scale, s, ls, row_max_out);
                });
            },
            [](std::size_t rows, const float* p, std::size_t ls, const float* v, std::size_t v_row, std::size_t len,
               float* acc, std::size_t d_head, std::size_t acc_ld) {
                with_rows(rows, [&]<std::size_t R>() { S::template pv<R>(p, ls, v, v_row, len, acc, d_head, acc_ld); });
            },
            // transpose: blocks over rows and columns rounded up to 16
            [](const float* in, std::size_t ld, std::size_t rows, std::size_t cols, float* out, std::size_t ldo) {
                const std::size_t rows16 = (rows + 15) / 16 * 16, cols16 = (cols + 15) / 16 * 16;
                for (std::size_t r0 = 0; r0 < rows16; r0 += S::block) {
                    const std::size_t live = r0 < rows ? std::min(S::block, rows - r0) : 0;
                    for (std::size_t c0 = 0; c0 < cols16; c0 += S::block)
                        S::transpose_block(live > 0 ? in + r0 * ld + c0 : in, ld, live, out + c0 * ldo + r0, ldo);
                }
            },
            // pack_panels: a block of keys by a block of columns at a time
            [](const float* x, std::size_t x_row, std::size_t n, std::size_t d_head, float* dst) {
                std::fill(dst + n / panel_keys * panel_keys * d_head, dst + round_to_panel(n) * d_head, 0.0f);
                for (std::size_t j0 = 0; j0 < n; j0 += S::block) {
                    float* panel = dst + (j0 / panel_keys) * panel_keys * d_head + j0 % panel_keys;
                    for (std::size_t c = 0; c < d_head; c += S::block)
                        S::transpose_block(x + j0 * x_row + c, x_row, std::min(S::block, n - j0),
                                           panel + panel_keys * c, panel_keys);
                }
            }};
}

}  // namespace headwise::fast::detail
