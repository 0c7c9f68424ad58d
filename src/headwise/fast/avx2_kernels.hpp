// headwise/fast/avx2_kernels.hpp -- the AVX2 + FMA register tiles behind Kernel::micro_kernel_avx2.
//
// The AVX-512 tiles' work (avx512_kernels.hpp) in 16 ymm registers of 8 floats: each tile is sized
// so that its accumulators, the vectors it loads and one broadcast fit them, as an AVX2 sgemm
// kernel is (6 x 16: 12 accumulators, 2 loads, 1 broadcast = 15 registers):
//   scores (6, 16) = q (6, d_head) . K^T (d_head, 16): a panel of 32 keys in two halves, each row of
//   a half two 8-float loads (a last half with at most 8 keys to go is computed half-wide);
//   acc (6, 16) += p (6, len) . v (len, 16), then the next 16 columns of v (8 at the end);
//   transposes 8 x 8 in registers (unpack, shuffle, then swap 128-bit halves).
// The packed layout is the AVX-512 tiles' (panels of 32 keys), so everything around the tiles is
// shared. For a CPU with AVX2 and FMA and d_head a multiple of 8 (choose_kernel); on an AVX-512
// CPU, HEADWISE_ISA=avx2 runs them. Internal to headwise::fast; register_tiles.hpp says what each
// function computes.
#pragma once

#include "headwise/fast/register_tiles.hpp"

namespace headwise::fast::detail {

extern const RegisterTiles avx2_tiles;

}  // namespace headwise::fast::detail
