// kernels/flash_tiles.hpp -- the tile shapes version 7 (flash.cuh) is built in, by name.
//
// Plain C++ (no CUDA, no emulator): the host picks a shape at run time (Problem::tiles), the
// kernel takes it as a template argument. A name gives the d_head 64 shape:
//
//   name           warps x rows  keys  stages  registers budgeted for
//   w4_r16_k32     4 x 16        32    2       4 blocks an SM (128 a thread): version 6's shape
//   w4_r16_k64     4 x 16        64    2       3 blocks (168): half the barriers and O rescales per key
//   w4_r32_k32     4 x 32        32    2       2 blocks (255): two mma row tiles a warp, so each K/V
//                                              fragment ldmatrix loads feeds 4 mma instead of 2, and a
//                                              block's K/V tile serves 128 rows
//   w4_r32_k32_s3  4 x 32        32    3       2 blocks: two tiles in flight
//   w4_r32_k64     4 x 32        64    2       2 blocks: FlashAttention-2's 4 warps x 32 rows; the
//                                              default (below)
//   w8_r16_k32     8 x 16        32    2       2 blocks (128): a K/V tile serves 128 rows
// (with fewer registers, ptxas spills: 168 for w4_r32_k32, 128 for w4_r16_k64, sm_90.)
//
// The default, w4_r32_k64: both halvings at once -- 32 rows a warp halve the shared-memory reads
// (ldmatrix) per mma, 64-key tiles halve the barriers and O rescales per key. It pays with
// registers (243 a thread on sm_90, unspilled) and 48 KiB of shared memory a block: 2 blocks of
// 4 warps an SM, 12.5% occupancy, by design (FlashAttention-2's own choice). Measured on an
// H200 (docs/data/gpu-h200-2026-11-26-tiles.csv, B=8 H=16 d_head=64 fp16, median of 20): the
// fastest of the six at N=1024, 4096 and causal 4096 -- 2.010 ms at 4096, 92% of SDPA flash's
// throughput, where w4_r16_k32 (the default before) took 2.299 ms (80%).
//
// At d_head 128, O alone takes 64 registers and Q is read from shared memory for every tile:
// every shape keeps 16 rows per warp and 16-key tiles there (its warps and stages stay).
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace headwise::kernels {

enum class FlashTiles { w4_r16_k32, w4_r16_k64, w4_r32_k32, w4_r32_k32_s3, w4_r32_k64, w8_r16_k32 };
inline constexpr std::array<FlashTiles, 6> flash_tiles{FlashTiles::w4_r16_k32, FlashTiles::w4_r16_k64,
                                                       FlashTiles::w4_r32_k32, FlashTiles::w4_r32_k32_s3,
                                                       FlashTiles::w4_r32_k64, FlashTiles::w8_r16_k32};
inline constexpr FlashTiles default_flash_tiles = FlashTiles::w4_r32_k64;  // version 7's, unless Problem::tiles says
inline constexpr FlashTiles mma_flash_tiles = FlashTiles::w4_r16_k32;      // version 6's one shape

struct FlashTileShape {
    int warps;      // per block
    int row_tiles;  // (16, d_head) tiles of query rows per warp: 16 or 32 rows
    int cols;       // Bc: keys per K/V tile
    int stages;     // K/V tiles in shared memory at once (version 7)
    int blocks;     // blocks per SM the registers are budgeted for (__launch_bounds__)
};

constexpr FlashTileShape flash_tile_shape(FlashTiles t, int d_head) {
    // At d_head 64, in flash_tiles' order: warps, row tiles, keys, stages, blocks (the table above).
    constexpr std::array<FlashTileShape, flash_tiles.size()> at_64{
        {{4, 1, 32, 2, 4}, {4, 1, 64, 2, 3}, {4, 2, 32, 2, 2}, {4, 2, 32, 3, 2}, {4, 2, 64, 2, 2}, {8, 1, 32, 2, 2}}};
    const FlashTileShape s = at_64[static_cast<std::size_t>(t)];
    if (d_head > 64) return {s.warps, 1, 16, s.stages, 16 / s.warps};  // 128 registers a thread
    return s;
}

constexpr std::string_view name(FlashTiles t) {
    constexpr std::array<std::string_view, flash_tiles.size()> names{"w4_r16_k32",    "w4_r16_k64", "w4_r32_k32",
                                                                     "w4_r32_k32_s3", "w4_r32_k64", "w8_r16_k32"};
    return names[static_cast<std::size_t>(t)];
}

inline FlashTiles flash_tiles_named(std::string_view text) {
    for (FlashTiles t : flash_tiles)
        if (name(t) == text) return t;
    throw std::invalid_argument("no tile shape named '" + std::string(text) + "' (w4_r16_k32, w4_r16_k64, " +
                                "w4_r32_k32, w4_r32_k32_s3, w4_r32_k64 or w8_r16_k32)");
}

// Calls f(std::integral_constant<FlashTiles, t>{}): from a run-time shape to a kernel's template argument.
template <class F>
decltype(auto) with_flash_tiles(FlashTiles t, F&& f) {
    switch (t) {
        case FlashTiles::w4_r16_k64:
            return f(std::integral_constant<FlashTiles, FlashTiles::w4_r16_k64>{});
        case FlashTiles::w4_r32_k32:
            return f(std::integral_constant<FlashTiles, FlashTiles::w4_r32_k32>{});
        case FlashTiles::w4_r32_k32_s3:
            return f(std::integral_constant<FlashTiles, FlashTiles::w4_r32_k32_s3>{});
        case FlashTiles::w4_r32_k64:
            return f(std::integral_constant<FlashTiles, FlashTiles::w4_r32_k64>{});
        case FlashTiles::w8_r16_k32:
            return f(std::integral_constant<FlashTiles, FlashTiles::w8_r16_k32>{});
        case FlashTiles::w4_r16_k32:
            break;
    }
    return f(std::integral_constant<FlashTiles, FlashTiles::w4_r16_k32>{});
}

}  // namespace headwise::kernels
