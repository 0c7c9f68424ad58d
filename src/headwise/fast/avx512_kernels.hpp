// headwise/fast/avx512_kernels.hpp -- the register tiles behind Kernel::micro_kernel.
//
// BLAS packs both operands of every call: for a tile of queries against a block of keys that
// is the block of K (again for every tile of the same head) and the tile's exp(scores). Here K
// is transposed once per head into K^T (d_head, N_k), so a row of 16 keys is one load, and the
// two products are register tiles that read their operands where they lie:
//   scores (6, 32) = q (6, d_head) . K^T (d_head, 32): 12 accumulators, q broadcast from memory,
//   K^T in panels of 32 keys;
//   acc (6, 64) += p (6, len) . v (len, 64): 24 accumulators, four 16-float loads of a v row.
// Only for a CPU with AVX-512 and d_head a multiple of 16 (choose_kernel). Internal to
// headwise::fast.
#pragma once

#include "headwise/fast/fused_attention.hpp"

#include <cstddef>

namespace headwise::detail {

// Queries per register tile: 6 rows x 2 vectors of scores, or 6 x 4 of acc, plus the operands,
// fit the 32 zmm registers.
inline constexpr std::size_t micro_rows = 6;

// s (rows, len rounded up to 16; ls apart) = scale * q (rows, q_row apart) . K^T for rows <= 6
// queries and len keys of k_panels (pack_head's layout, from the block's first key). Row r's
// largest score among its first valid[r] (at most len: with a causal mask, the keys up to its own
// query) goes to row_max_out[r] on the way, so no second pass over the scores looks for it.
void micro_scores(std::size_t rows, const float* q, std::size_t q_row, const float* k_panels, std::size_t d_head,
                  std::size_t len, const std::size_t* valid, float scale, float* s, std::size_t ls, float* row_max_out);

// acc (rows, d_head; acc_ld apart) += p (rows, len; ls apart) . v (len rows, v_row apart), rows <= 6.
void micro_pv(std::size_t rows, const float* p, std::size_t ls, const float* v, std::size_t v_row, std::size_t len,
              float* acc, std::size_t d_head, std::size_t acc_ld);

// out (cols rounded up to 16, rows rounded up to 16; ldo apart) = in (rows, cols; ld apart)
// transposed, 16 x 16 at a time; in's columns up to cols rounded up to 16 are read (ld must
// reach them), and out's columns past `rows` are zeros.
void micro_transpose(const float* in, std::size_t ld, std::size_t rows, std::size_t cols, float* out, std::size_t ldo);

// Rows [0, n) of x (x_row apart, d_head wide) as K^T panels of 32 (pack_head's layout), zero-padded
// to n rounded up to 32: into dst (d_head * round_to_panel(n) floats).
void pack_panels(const float* x, std::size_t x_row, std::size_t n, std::size_t d_head, float* dst);

// Head (b, h)'s K^T in panels of 32 keys, zero-padded past N_k: (N_k / 32, d_head, 32) into
// k_dst (packed_head_floats); its V as one contiguous (N_k, d_head) block into v_dst. Rows of V
// in place are 3 * d_model floats apart, a stride that keeps only two L1 sets busy.
void pack_head(const AttentionShape& s, Strided<const float> k, Strided<const float> v, std::size_t b, std::size_t h,
               float* k_dst, float* v_dst);

}  // namespace headwise::detail
