// kernels/copy16.cuh -- load_16: a thread copies 16 bytes of global memory into a shared tile.
//
// One 16-byte load and one 16-byte store (LDG.E.128, STS.128) instead of eight 2-byte ones: the
// way versions 5 and 6 fill their tiles. Versions 1-4 read 4-byte floats one at a time.
//
//   load_16(tile, r, c, src, offset, valid)
//       tile(r, c .. c + 16 / sizeof(T) - 1) = src[offset ..], or zeros when !valid;
//       src + offset and tile.ptr(r, c) must be 16-byte aligned (on a GPU; the emulator does
//       not check it)
#pragma once

#include "kernels/offsets.cuh"
#include "kernels/portable.cuh"

#include <cstddef>

namespace headwise::kernels {

#ifdef __CUDACC__

template <class T, class Tile>
__device__ __forceinline__ void load_16(Tile& tile, int r, int c, const T* src, std::size_t offset, bool valid) {
    uint4 x = make_uint4(0, 0, 0, 0);
    if (valid) x = *reinterpret_cast<const uint4*>(src + offset);
    *reinterpret_cast<uint4*>(tile.ptr(r, c)) = x;
}

#else

// The emulator's load_16: element by element, bounds- and race-checked. Not in the bank count,
// like cp.async: a GPU serves a 16-byte store per 8 lanes, which the 4-byte model would misread.
template <class T, int Rows, int Cols>
void load_16(emulator::shared_tile<T, Rows, Cols>& tile, int r, int c, global_ptr<const T> src, std::size_t offset,
             bool valid, std::source_location where = std::source_location::current()) {
    constexpr int count = int(16 / sizeof(T));
    if (r < 0 || r >= Rows || c < 0 || c + count > Cols)
        emulator::machine::shared_out_of_bounds(r, c + count - 1, Rows, Cols, where);
    for (int e = 0; e < count; ++e) {
        const T x = valid ? static_cast<T>(src[std::ptrdiff_t(offset) + e]) : T(0.0f);
        emulator::machine::shared_write(tile.words[r][c + e], r, c + e, where);
        tile.data[r][c + e] = x;
    }
}

#endif

// Rows first_row .. first_row + Rows - 1 of an (N, D) slice into a 16-bit tile, the block's
// Threads threads 16 bytes each per round; rows at or past `real_end` are zeros.
template <int D, int Rows, int Threads, class Tile, class T>
__device__ __forceinline__ void load_rows(Tile& tile, global_ptr<const T> src, int first_row, int real_end, int t) {
    constexpr int C = D / 8;  // 16-byte chunks per row
    for (int e = t; e < Rows * C; e += Threads) {
        const int r = e / C, c = 8 * (e % C);
        load_16(tile, r, c, src, at(first_row + r, D, c), first_row + r < real_end);
    }
}

// The same for a tile of keys and its values together: rows k0 .. k0 + Rows - 1 of the (N, D)
// slices k and v.
template <int D, int Rows, int Threads, class KTile, class VTile, class T>
__device__ __forceinline__ void load_kv_rows(KTile& k_tile, VTile& v_tile, global_ptr<const T> k, global_ptr<const T> v,
                                             int k0, int real_end, int t) {
    constexpr int C = D / 8;
    for (int e = t; e < Rows * C; e += Threads) {
        const int r = e / C, c = 8 * (e % C);
        const bool real = k0 + r < real_end;
        load_16(k_tile, r, c, k, at(k0 + r, D, c), real);
        load_16(v_tile, r, c, v, at(k0 + r, D, c), real);
    }
}

}  // namespace headwise::kernels
