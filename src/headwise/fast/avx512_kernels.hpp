// headwise/fast/avx512_kernels.hpp -- the AVX-512 register tiles behind Kernel::micro_kernel_avx512.
//
// With 32 zmm registers of 16 floats:
//   scores (6, 32) = q (6, d_head) . K^T (d_head, 32): 12 accumulators, q broadcast from memory,
//   K^T in panels of 32 keys (two 16-float loads a row);
//   acc (6, 64) += p (6, len) . v (len, 64): 24 accumulators, four 16-float loads of a v row;
//   transposes 16 x 16 in registers (K^T's panels; the backward's P^T and dS^T).
// Only for a CPU with AVX-512 and d_head a multiple of 16 (choose_kernel). Internal to
// headwise::fast; register_tiles.hpp says what each function computes.
#pragma once

#include "headwise/fast/register_tiles.hpp"

namespace headwise::fast::detail {

extern const RegisterTiles avx512_tiles;

}  // namespace headwise::fast::detail
