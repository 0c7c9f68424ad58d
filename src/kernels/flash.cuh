// kernels/flash.cuh -- versions 6 and 7: FlashAttention-2 on mma.sync, all in registers.
//
// Version 5 (tensor_core.cuh) multiplies on tensor cores through wmma, whose fragment layout is
// the hardware's secret: every per-row step (masking, the softmax, rescaling O) makes a round
// trip through shared memory. mma.sync m16n8k16 (kernels/mma.cuh) has a layout the PTX ISA
// publishes (emulator/fragment_layout.hpp): lane L holds rows g = L / 4 and g + 8 of every tile,
// columns 2 q and 2 q + 1 (q = L % 4) of each 8-wide piece. So a warp keeps all of it in registers:
//
//   Q (16, D)   per warp, loaded once with ldmatrix into A fragments: D / 16 x 4 registers
//   S = Q K^T   (16, Bc): Bc / 8 accumulators of (16, 8), K read from shared memory by ldmatrix
//   softmax     on S's registers: a row's max and sum over the 4 lanes of a quad (two shuffles),
//               exp as 2^x on the special-function unit (fast_exp2: one instruction, not exp2f's four)
//   P           S's accumulators rounded to 16 bits ARE the A fragments of P V: the C layout of
//               two neighbouring (16, 8) tiles is the A layout of one (16, 16) -- no shared memory
//   O += P V    V read by ldmatrix.trans (V is (key, d) in memory, B wants it column by column)
//   out = O / l at the end, l summed over the quad once
//
// Version 6 `mma`: the above, with K/V tiles loaded into padded shared tiles (rows of D + 8
// halves: ldmatrix's 8 rows fall in 8 different 16-byte bank groups) by the block's threads,
// 16 bytes at a time, then a barrier, then the math: the tensor cores wait for every load.
// Version 7 `pipelined`: the tiles come in with cp.async into unpadded tiles whose 16-byte chunks
// are XOR-swizzled (chunk c of row r stored at c ^ (r % 8)): the same 0 bank conflicts without the
// padding, which is what lets two stages of K and V fit in 48 KiB at d_head 128. Stages: tile
// t + 1 (.. t + stages - 1) is on its way while tile t is multiplied; one barrier per tile, after
// which every copy of tile t has landed and every warp is done with tile t - 1, whose stage then
// takes the next tile. A thread copies the same (row, chunk) pairs of every tile: their shared and
// global offsets, swizzle included, are worked out once (CopyShare), not per copy.
//
// Shapes (kernels/flash_tiles.hpp); d_head 64 or 128 (multiples of 64: the swizzle permutes 8
// chunks). Version 6: 4 warps x 16 query rows = 64 rows per block, key tiles of Bc = 32 keys (16
// at d_head 128), within 128 registers per thread, unspilled, so that 4 blocks (16 warps, 25% of
// an sm_90 SM) fit: S (16, Bc) takes Bc / 2 registers, O (16, D) D / 2, Q D / 4 -- at d_head 128
// Q is read from shared memory again for each tile instead, and the tile is 16 keys (ptxas -v,
// sm_90: at most 128 registers, no spill, both d_heads).
// Version 7 takes its shape as a template argument, one of six: 16 or 32 rows a warp, 32- or
// 64-key tiles, 4 or 8 warps, 2 or 3 stages, registers budgeted per shape (__launch_bounds__: 128
// a thread for 16 warps an SM, 168 for 12, 255 for 8), unspilled. Its default at d_head 64 is
// FlashAttention-2's, w4_r32_k64: 4 warps x 32 rows = 128 rows per block, 64-key tiles.
//   - 32 rows a warp are two row tiles: each K or V fragment ldmatrix loads feeds twice the mma,
//     half the shared-memory reads per multiply (and a block's K/V tiles serve 128 rows: half
//     the K/V loads from global memory);
//   - 64-key tiles: half the barriers, and half the row-max updates and O rescales, per key.
//   The price is registers: S and O (32, 64) take 64 each, Q 32; 243 a thread in all (ptxas
//   sm_90, no spill), and 48 KiB of shared memory (Q 16, two stages of K and V 32): 2 blocks of
//   4 warps an SM, 12.5% occupancy, by design -- each warp has twice the independent mma to
//   issue, and the next tile is on its way by cp.async. On an H200 (B=8, H=16, fp16, median of
//   20; docs/data/gpu-h200-2026-11-26-tiles.csv) it was the fastest of the six: 2.010 ms at
//   N=4096, 92% of SDPA flash's throughput, where w4_r16_k32 (the default before it: version 6's
//   shape) took 2.299 ms, 80%. At d_head 128 every shape keeps 16 rows and 16-key tiles, within
//   48 KiB and 128 registers, unspilled.
// Per tile, the softmax costs one FFMA and one ex2 per score (the scale goes into the exponent's
// FFMA), the row max one FMNMX; only tiles that cross the diagonal or the padding pay for the
// mask (a branch the whole warp takes or skips).
// Causal: key tiles past the block's last row are never loaded, a warp skips tiles entirely above
// its rows, and the blocks with the most tiles start first.
// Offsets into q, k, v, out are 64-bit: N x N x d_head may exceed 2^31.
//
// Precision: as version 5's (tensor_core.cuh derives it), the same two bounds hold: inputs and
// P rounded to 16 bits, every product exact, sums and the softmax in fp32.
#pragma once

#include "kernels/copy16.cuh"
#include "kernels/flash_tiles.hpp"
#include "kernels/head_block.cuh"
#include "kernels/mma.cuh"
#include "kernels/portable.cuh"

namespace headwise::kernels {

template <int D, FlashTiles Tiles>
struct FlashShape {
    static_assert(D % 64 == 0, "versions 6 and 7 are built for d_head 64 and 128");
    static constexpr int warps = flash_tile_shape(Tiles, D).warps;
    static constexpr int threads = 32 * warps;
    static constexpr int row_tiles = flash_tile_shape(Tiles, D).row_tiles;  // (16, D) row tiles per warp
    static constexpr int warp_rows = 16 * row_tiles;                        // query rows per warp
    static constexpr int rows = warps * warp_rows;                          // Br: query rows per block
    static constexpr int cols = flash_tile_shape(Tiles, D).cols;            // Bc: keys per tile
    static constexpr int stages = flash_tile_shape(Tiles, D).stages;        // version 7's K/V stages
    static constexpr int blocks = flash_tile_shape(Tiles, D).blocks;        // per SM: the register budget
    static constexpr int padded = D + 8;                                    // version 6's row stride, in elements
    static constexpr int chunks = D / 8;                                    // 16-byte chunks per row
    // Static shared memory per block, 16-bit elements.
    static constexpr std::size_t mma_shared_bytes = 2 * std::size_t(rows + 2 * cols) * padded;
    static constexpr std::size_t pipelined_shared_bytes = 2 * std::size_t(rows + 2 * stages * cols) * D;
    static_assert(cols % 16 == 0, "P V takes the tile's keys 16 at a time (one A fragment)");
    static_assert(stages >= 2, "a tile is copied while the one before it is multiplied");
    static_assert(mma_shared_bytes <= 48 * 1024 && pipelined_shared_bytes <= 48 * 1024,
                  "the tiles fit 48 KiB of static shared memory");
};

// Where column c of row r of a tile is stored: padded tiles keep it, swizzled ones move its chunk.
struct Padded {
    __device__ __forceinline__ static int col(int /*r*/, int c) { return c; }
};
template <int D>
struct Swizzled {
    __device__ __forceinline__ static int col(int r, int c) { return 8 * swizzle<D / 8>(r, c / 8) + c % 8; }
};

// What one warp knows about its M x 16 query rows (M row tiles) while it walks the key tiles.
template <int D, int M>
struct WarpRows {
    // At d_head 128, O alone takes 64 registers: Q stays in shared memory and is read again for
    // every tile, which keeps the kernel within 128 registers (4 blocks, 25% occupancy) unspilled.
    static constexpr bool q_in_registers = D <= 64;
    static constexpr int q_tiles = q_in_registers ? M : 1, q_slices = q_in_registers ? D / 16 : 1;
    std::uint32_t q[q_tiles][q_slices][4];  // Q (16, D) per row tile as A fragments, 16 columns each
    float o[M][D / 8][4];                   // O (16, D) per row tile, unnormalised: (16, 8) accumulators
    float m[M][2];  // running max of rows g and g + 8 of each row tile (log2 units), quad-uniform
    float l[M][2];  // running sum of this lane's weights of those rows
    int end[M][2];  // keys [0, end) visible to those rows
};

// Columns 16 kk .. 16 kk + 15 of Q (16, D), the rows r0 .. r0 + 15 of q_tile, as an A fragment.
template <class Layout, class Tile>
__device__ __forceinline__ void load_q_slice(std::uint32_t (&q)[4], Tile& q_tile, int r0, int kk, int lane) {
    const int mat = lane / 8, r = r0 + 8 * (mat % 2) + lane % 8;  // lanes 8 mat ..: rows of matrix mat
    ldmatrix_x4(q, q_tile, r, Layout::col(r, 16 * kk + 8 * (mat / 2)));
}

// Q's A fragments into registers, where they stay (d_head 64): the warp's rows r0 .. of q_tile.
template <class Layout, int D, int M, class Tile>
__device__ __forceinline__ void load_q_fragments(WarpRows<D, M>& rows, Tile& q_tile, int r0, int lane) {
    if constexpr (WarpRows<D, M>::q_in_registers) {
        HEADWISE_UNROLL
        for (int i = 0; i < M; ++i) HEADWISE_UNROLL
        for (int kk = 0; kk < D / 16; ++kk) load_q_slice<Layout>(rows.q[i][kk], q_tile, r0 + 16 * i, kk, lane);
    }
}

// S = Q K^T for the warp's row tiles (rows r0 .. of q_tile) and keys kr .. kr + Bc - 1 of
// k_tile: each K fragment ldmatrix loads is multiplied by every row tile's Q.
template <int D, int M, int Bc, class T, class Layout, class QTile, class KTile>
__device__ __forceinline__ void scores(float (&s)[M][Bc / 8][4], const WarpRows<D, M>& rows, QTile& q_tile, int r0,
                                       KTile& k_tile, int kr, int lane) {
    const int mat = lane / 8;  // lanes 8 mat .. 8 mat + 7 address matrix mat of an x4
    HEADWISE_UNROLL
    for (int i = 0; i < M; ++i) HEADWISE_UNROLL
    for (int n = 0; n < Bc / 8; ++n) s[i][n][0] = s[i][n][1] = s[i][n][2] = s[i][n][3] = 0.0f;
    HEADWISE_UNROLL
    for (int kk = 0; kk < D / 16; ++kk) {
        std::uint32_t q[M][4];  // Q's columns 16 kk ..: kept since the first tile, or read again
        HEADWISE_UNROLL
        for (int i = 0; i < M; ++i) {
            if constexpr (WarpRows<D, M>::q_in_registers) {
                HEADWISE_UNROLL
                for (int e = 0; e < 4; ++e) q[i][e] = rows.q[i][kk][e];
            } else {
                load_q_slice<Layout>(q[i], q_tile, r0 + 16 * i, kk, lane);
            }
        }
        HEADWISE_UNROLL
        for (int n = 0; n < Bc / 8; n += 2) {
            // Matrices: keys 8n.. at d 16kk and 16kk + 8, then keys 8(n + 1).. at the same d.
            const int r = kr + 8 * (n + mat / 2) + lane % 8;
            std::uint32_t kb[4];
            ldmatrix_x4(kb, k_tile, r, Layout::col(r, 16 * kk + 8 * (mat % 2)));
            const std::uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
            HEADWISE_UNROLL
            for (int i = 0; i < M; ++i) {
                mma_m16n8k16<T>(s[i][n], q[i], b0, s[i][n]);
                mma_m16n8k16<T>(s[i][n + 1], q[i], b1, s[i][n + 1]);
            }
        }
    }
}

// Keys k0 + .. at or past a row's end (the diagonal, the padding) out of S: `none`, the raw
// score whose weight is 0 (-inf, or +inf for a negative scale).
template <int D, int M, int Bc>
__device__ __forceinline__ void mask_scores(float (&s)[M][Bc / 8][4], const WarpRows<D, M>& rows, int k0, float none,
                                            int lane) {
    const int key = k0 + 2 * (lane % 4);  // this lane's first key: columns 2 qd, 2 qd + 1 of each 8
    HEADWISE_UNROLL
    for (int i = 0; i < M; ++i) HEADWISE_UNROLL
    for (int n = 0; n < Bc / 8; ++n) HEADWISE_UNROLL
    for (int c = 0; c < 4; ++c)
        if (key + 8 * n + c % 2 >= rows.end[i][c / 2]) s[i][n][c] = none;
}

// The larger (up) or smaller of two raw scores.
__device__ __forceinline__ float extreme(float x, float y, bool up) { return up ? fmaxf(x, y) : fminf(x, y); }

// The online softmax on S's registers, rows g (half 0) and g + 8 (half 1) of each row tile: the
// quad (lanes 4g .. 4g + 3) holds a row, this lane columns 2 qd, 2 qd + 1 of each 8-key piece.
// exp(x scale - m) = exp2(x scale2 - m'), m' in log2 units: one FFMA and one ex2 per score. The
// row's largest scaled score is scale2 times its largest raw one (its smallest for a negative
// scale). Two running maxima and sums per row (even and odd columns): half the dependent chain.
template <int D, int M, int Bc>
__device__ __forceinline__ void softmax_tile(WarpRows<D, M>& rows, float (&s)[M][Bc / 8][4], float scale2) {
    const bool up = scale2 >= 0.0f;
    HEADWISE_UNROLL
    for (int i = 0; i < M; ++i) HEADWISE_UNROLL
    for (int half = 0; half < 2; ++half) {
        float x0 = s[i][0][2 * half], x1 = s[i][0][2 * half + 1];
        HEADWISE_UNROLL
        for (int n = 1; n < Bc / 8; ++n)
            x0 = extreme(x0, s[i][n][2 * half], up), x1 = extreme(x1, s[i][n][2 * half + 1], up);
        float x = extreme(x0, x1, up);
        x = extreme(x, __shfl_xor_sync(0xffffffffu, x, 1), up);
        x = extreme(x, __shfl_xor_sync(0xffffffffu, x, 2), up);
        const float m_old = rows.m[i][half], m_new = fmaxf(m_old, x * scale2);
        const float m_safe = m_new == -INFINITY ? 0.0f : m_new;  // no key seen yet: every p is 0
        const float rescale = fast_exp2(m_old - m_safe);
        float sum0 = 0.0f, sum1 = 0.0f;
        HEADWISE_UNROLL
        for (int n = 0; n < Bc / 8; ++n) {
            float& p0 = s[i][n][2 * half];
            float& p1 = s[i][n][2 * half + 1];
            p0 = fast_exp2(fmaf(p0, scale2, -m_safe)), p1 = fast_exp2(fmaf(p1, scale2, -m_safe));
            sum0 += p0, sum1 += p1;
        }
        rows.l[i][half] = rows.l[i][half] * rescale + (sum0 + sum1);
        rows.m[i][half] = m_new;
        HEADWISE_UNROLL
        for (int n = 0; n < D / 8; ++n) rows.o[i][n][2 * half] *= rescale, rows.o[i][n][2 * half + 1] *= rescale;
    }
}

// O += P V for keys kr .. kr + Bc - 1 of v_tile, 16 at a time: P's A fragment is S's
// accumulators 2j and 2j + 1, rounded; each V fragment ldmatrix.trans loads feeds every row tile.
template <int D, int M, int Bc, class T, class Layout, class VTile>
__device__ __forceinline__ void accumulate_pv(WarpRows<D, M>& rows, const float (&s)[M][Bc / 8][4], VTile& v_tile,
                                              int kr, int lane) {
    const int mat = lane / 8;
    HEADWISE_UNROLL
    for (int j = 0; j < Bc / 16; ++j) {
        std::uint32_t p[M][4];
        HEADWISE_UNROLL
        for (int i = 0; i < M; ++i) {
            p[i][0] = pack<T>(s[i][2 * j][0], s[i][2 * j][1]), p[i][1] = pack<T>(s[i][2 * j][2], s[i][2 * j][3]);
            p[i][2] = pack<T>(s[i][2 * j + 1][0], s[i][2 * j + 1][1]);
            p[i][3] = pack<T>(s[i][2 * j + 1][2], s[i][2 * j + 1][3]);
        }
        HEADWISE_UNROLL
        for (int n = 0; n < D / 8; n += 2) {
            // Matrices (transposed): keys 16j.. and 16j + 8.. at d 8n, then the same keys at d 8(n + 1).
            const int r = kr + 16 * j + 8 * (mat % 2) + lane % 8;
            std::uint32_t vb[4];
            ldmatrix_x4_trans(vb, v_tile, r, Layout::col(r, 8 * (n + mat / 2)));
            const std::uint32_t b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
            HEADWISE_UNROLL
            for (int i = 0; i < M; ++i) {
                mma_m16n8k16<T>(rows.o[i][n], p[i], b0, rows.o[i][n]);
                mma_m16n8k16<T>(rows.o[i][n + 1], p[i], b1, rows.o[i][n + 1]);
            }
        }
    }
}

// One key tile, keys k0 .. k0 + Bc - 1, rows kr .. kr + Bc - 1 of k_tile and v_tile: S = Q K^T,
// the online softmax on S's registers, O += P V. `masked`: some key of the tile is past some
// row's end. scale2 = scale * log2(e).
template <int D, int M, int Bc, class T, class Layout, class QTile, class KTile, class VTile>
__device__ __forceinline__ void attend_tile(WarpRows<D, M>& rows, QTile& q_tile, int r0, KTile& k_tile, VTile& v_tile,
                                            int kr, int k0, bool masked, float scale2, int lane) {
    float s[M][Bc / 8][4];  // S (16, Bc) per row tile: (16, 8) accumulators
    scores<D, M, Bc, T, Layout>(s, rows, q_tile, r0, k_tile, kr, lane);
    if (masked) mask_scores<D, M, Bc>(s, rows, k0, scale2 >= 0.0f ? -INFINITY : INFINITY, lane);
    softmax_tile<D, M, Bc>(rows, s, scale2);
    accumulate_pv<D, M, Bc, T, Layout>(rows, s, v_tile, kr, lane);
}

// The warp's rows before the first tile: nothing seen, their visible key counts. `row`: this
// lane's row g of the first row tile.
template <int D, int M>
__device__ __forceinline__ void start_rows(WarpRows<D, M>& rows, int row, int n_keys, bool causal) {
    HEADWISE_UNROLL
    for (int i = 0; i < M; ++i) {
        HEADWISE_UNROLL
        for (int n = 0; n < D / 8; ++n) rows.o[i][n][0] = rows.o[i][n][1] = rows.o[i][n][2] = rows.o[i][n][3] = 0.0f;
        HEADWISE_UNROLL
        for (int half = 0; half < 2; ++half) {
            rows.m[i][half] = -INFINITY, rows.l[i][half] = 0.0f;
            rows.end[i][half] = key_end(row + 16 * i + 8 * half, n_keys, causal);
        }
    }
}

// out = O / l for the warp's rows that exist; a row that saw no key gives zeros.
template <int D, int M>
__device__ __forceinline__ void write_rows(WarpRows<D, M>& rows, global_ptr<float> out, std::size_t head, int row,
                                           int N, int lane) {
    const int qd = lane % 4;
    HEADWISE_UNROLL
    for (int i = 0; i < M; ++i) HEADWISE_UNROLL
    for (int half = 0; half < 2; ++half) {
        float l = rows.l[i][half];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        const int r = row + 16 * i + 8 * half;
        if (r >= N) continue;
        const std::size_t at = (head + std::size_t(r)) * D + 2 * qd;
        HEADWISE_UNROLL
        for (int n = 0; n < D / 8; ++n) {
            out[at + 8 * n] = rows.o[i][n][2 * half] * inv;
            out[at + 8 * n + 1] = rows.o[i][n][2 * half + 1] * inv;
        }
    }
}

// Which block of query rows this block owns. Causal, block x has x + 1 key tiles to walk: the
// last blocks of a head cost the most, so they are given out first (the GPU starts blocks in
// blockIdx order), and the last blocks to start are the cheap ones instead of the dearest.
__device__ __forceinline__ int query_block(const AttentionArgs& a) {
    const int x = static_cast<int>(blockIdx.x);
    return a.causal ? static_cast<int>(gridDim.x) - 1 - x : x;
}

// grid (ceil(N / 64), H, B), block 128: warp w of block (bx, h, b) owns query rows bx * 64 + 16 w ..
//   q, k, v  (B, H, N, D), T = __half or __nv_bfloat16;  key_len (B);  out (B, H, N, D), fp32
template <int D, class T>
__global__ void __launch_bounds__(128, 4)
    attention_mma(global_ptr<const T> q, global_ptr<const T> k, global_ptr<const T> v, global_ptr<const int> key_len,
                  global_ptr<float> out, AttentionArgs a) {
    using Shape = FlashShape<D, mma_flash_tiles>;  // 4 warps x 16 rows, 32-key tiles (16 at d_head 128)
    constexpr int Br = Shape::rows, Bc = Shape::cols, LD = Shape::padded, M = Shape::row_tiles;
    static_assert(Shape::threads == 128 && Shape::blocks == 4, "launch bounds: 128 threads, 4 blocks");
    __shared__ shared_tile<T, Br, LD> q_tile;  // (Br, D) + 8 halves of padding per row
    __shared__ shared_tile<T, Bc, LD> k_tile;  // (Bc, D) + padding
    __shared__ shared_tile<T, Bc, LD> v_tile;  // (Bc, D) + padding

    const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
    const int N = a.seq;
    const HeadBlock<T> bh = head_block<D, Br>(q, k, v, key_len, a, query_block(a));
    const int q0 = bh.q0, n_keys = bh.n_keys, block_end = bh.block_end;
    const int r0 = Shape::warp_rows * warp;  // the warp's first row in q_tile
    const int row = q0 + r0 + lane / 4;      // this lane's row g; g + 8 is row + 8
    const int warp_last = q0 + r0 + Shape::warp_rows - 1;
    const int warp_min_end = key_end(q0 + r0, n_keys, a.causal);
    const float scale2 = a.scale * log2_e;

    load_rows<D, Br, Shape::threads>(q_tile, bh.q, q0, N, t);  // rows past N are zeros
    __syncthreads();
    WarpRows<D, M> rows;
    load_q_fragments<Padded>(rows, q_tile, r0, lane);
    start_rows(rows, row, n_keys, a.causal);

    for (int k0 = 0; k0 < block_end; k0 += Bc) {
        load_kv_rows<D, Bc, Shape::threads>(k_tile, v_tile, bh.k, bh.v, k0, block_end, t);  // zeros past the end
        __syncthreads();
        if (!a.causal || k0 <= warp_last)  // a tile entirely above the warp's rows: nothing to see
            attend_tile<D, M, Bc, T, Padded>(rows, q_tile, r0, k_tile, v_tile, 0, k0, k0 + Bc > warp_min_end, scale2,
                                             lane);
        __syncthreads();  // the tiles are free for the next ones
    }
    write_rows(rows, out, bh.head, row, N, lane);
}

// One thread's share of the 16-byte copies that fill a (Rows, D) tile, Threads at a time: copy j
// moves chunk t % C of row t / C + j * step (C = D / 8 chunks a row, step = Threads / C). The
// chunk and the row's swizzle (row % 8: step, and every stage's first row, are multiples of 8)
// are the same for every copy of every tile: worked out once, at the start.
template <int D, int Rows, int Threads>
struct CopyShare {
    static constexpr int chunks = D / 8, step = Threads / chunks, count = Rows / step;
    static_assert(Threads % chunks == 0 && Rows % step == 0 && step % 8 == 0, "whole rows, whole rounds");
    int row;   // copy 0's row
    int from;  // its column in global memory: 8 (t % C)
    int to;    // its column in the swizzled tile

    __device__ explicit CopyShare(int t)
        : row(t / chunks), from(8 * (t % chunks)), to(8 * swizzle<chunks>(t / chunks, t % chunks)) {}

    // Rows first .. first + Rows - 1 of an (N, D) slice into tile rows at .., cp.async; rows at
    // or past real_end are zeros. `at`: a multiple of 8.
    template <class Tile, class T>
    __device__ __forceinline__ void copy(Tile& tile, int at, global_ptr<const T> src, int first, int real_end) const {
        HEADWISE_UNROLL
        for (int j = 0; j < count; ++j) {
            const int r = row + j * step;
            cp_async_16(tile, at + r, to, src, std::size_t(first + r) * D + from, first + r < real_end);
        }
    }
};

// Version 7: version 6's math on K/V tiles that cp.async brings into `stages` swizzled stages, in
// the shape `Tiles` (kernels/flash_tiles.hpp). Waits = false drops the cp.async.wait_group before
// each tile: the mistake the emulator reports (a read of a tile some copy may still be writing),
// for the tests and the lesson.
// grid (ceil(N / Br), H, B), block 32 x warps: warp w of block (bx, h, b) owns query rows
// bx * Br + warp_rows * w ..
template <int D, class T, FlashTiles Tiles = default_flash_tiles, bool Waits = true>
__global__ void __launch_bounds__(FlashShape<D, Tiles>::threads, FlashShape<D, Tiles>::blocks)
    attention_pipelined(global_ptr<const T> q, global_ptr<const T> k, global_ptr<const T> v,
                        global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    using Shape = FlashShape<D, Tiles>;
    using Layout = Swizzled<D>;
    constexpr int Br = Shape::rows, Bc = Shape::cols, S = Shape::stages, M = Shape::row_tiles;
    __shared__ shared_tile<T, Br, D> q_tile;      // (Br, D), swizzled
    __shared__ shared_tile<T, S * Bc, D> k_tile;  // S stages of (Bc, D), swizzled
    __shared__ shared_tile<T, S * Bc, D> v_tile;  // S stages of (Bc, D), swizzled

    const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
    const int N = a.seq;
    const HeadBlock<T> bh = head_block<D, Br>(q, k, v, key_len, a, query_block(a));
    const int q0 = bh.q0, n_keys = bh.n_keys, block_end = bh.block_end;
    const int n_tiles = (block_end + Bc - 1) / Bc;
    const int r0 = Shape::warp_rows * warp;
    const int row = q0 + r0 + lane / 4;
    const int warp_last = q0 + r0 + Shape::warp_rows - 1;
    const int warp_min_end = key_end(q0 + r0, n_keys, a.causal);
    const float scale2 = a.scale * log2_e;
    const CopyShare<D, Bc, Shape::threads> kv(t);

    // Key tile `tile` into stage `tile % S`, as one commit group: empty past the last tile, so
    // that group g is always tile g's (wait_group counts groups).
    const auto fetch = [&](int tile) {
        if (tile < n_tiles) {
            kv.copy(k_tile, (tile % S) * Bc, bh.k, tile * Bc, block_end);
            kv.copy(v_tile, (tile % S) * Bc, bh.v, tile * Bc, block_end);
        }
        cp_async_commit();
    };

    WarpRows<D, M> rows;
    start_rows(rows, row, n_keys, a.causal);
    if (n_tiles > 0) {
        CopyShare<D, Br, Shape::threads>(t).copy(q_tile, 0, bh.q, q0, N);  // Q, in tile 0's group
        for (int tile = 0; tile < S - 1; ++tile) fetch(tile);
    }
    for (int tile = 0; tile < n_tiles; ++tile) {
        if constexpr (Waits) cp_async_wait<S - 2>();  // every group but the newest S - 2: tile `tile` has landed
        __syncthreads();      // ... for every thread's copies; and every warp is done with tile - 1
        fetch(tile + S - 1);  // into tile - 1's stage, while this one is multiplied
        if (tile == 0) load_q_fragments<Layout>(rows, q_tile, r0, lane);
        const int k0 = tile * Bc;
        if (!a.causal || k0 <= warp_last)  // a tile entirely above the warp's rows: nothing to see
            attend_tile<D, M, Bc, T, Layout>(rows, q_tile, r0, k_tile, v_tile, (tile % S) * Bc, k0,
                                             k0 + Bc > warp_min_end, scale2, lane);
    }
    write_rows(rows, out, bh.head, row, N, lane);
}

}  // namespace headwise::kernels
