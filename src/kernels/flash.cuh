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
// Version 7 `pipelined`: the tiles come in with cp.async, double-buffered -- tile t + 1 is on
// its way while tile t is multiplied -- into unpadded tiles whose 16-byte chunks are XOR-swizzled
// (chunk c of row r stored at c ^ (r % 8)): the same 0 bank conflicts without the padding, which
// is what lets two stages of K and V fit in 48 KiB at d_head 128.
//
// Both: 4 warps x 16 query rows = 64 rows per block; key tiles of Bc = 32 keys (16 at d_head
// 128); d_head 64 or 128 (multiples of 64: the swizzle permutes 8 chunks). Within 128 registers
// per thread, unspilled, so that 4 blocks (16 warps, 25% of an sm_90 SM) fit: S (16, Bc) takes
// Bc / 2 registers, O (16, D) D / 2, Q D / 4 -- at d_head 128 Q is read from shared memory again
// for each tile instead, and the tile is 16 keys (ptxas -v: 128 registers, no spill, both d_heads).
// Causal: key tiles past the block's last row are never loaded, a warp skips tiles entirely above
// its rows, only tiles that cross the diagonal (or the padding) pay for the mask, and the blocks
// with the most tiles start first.
// Offsets into q, k, v, out are 64-bit: N x N x d_head may exceed 2^31.
//
// Precision: as version 5's (tensor_core.cuh derives it), the same two bounds hold: inputs and
// P rounded to 16 bits, every product exact, sums and the softmax in fp32.
#pragma once

#include "kernels/copy16.cuh"
#include "kernels/head_block.cuh"
#include "kernels/mma.cuh"
#include "kernels/portable.cuh"

namespace headwise::kernels {

template <int D>
struct FlashShape {
    static_assert(D % 64 == 0, "versions 6 and 7 are built for d_head 64 and 128");
    static constexpr int warps = 4;
    static constexpr int threads = 32 * warps;
    static constexpr int rows = 16 * warps;         // Br: query rows per block
    static constexpr int cols = D <= 64 ? 32 : 16;  // Bc: keys per tile (16 at d_head 128: registers)
    static constexpr int padded = D + 8;            // version 6's row stride, in elements
    static constexpr int chunks = D / 8;            // 16-byte chunks per row
    // Static shared memory per block, 16-bit elements.
    static constexpr std::size_t mma_shared_bytes = 2 * std::size_t(rows + 2 * cols) * padded;
    static constexpr std::size_t pipelined_shared_bytes = 2 * std::size_t(rows + 4 * cols) * D;
    static_assert(cols % 16 == 0, "P V takes the tile's keys 16 at a time (one A fragment)");
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

// What one warp knows about its 16 query rows while it walks the key tiles.
template <int D>
struct WarpRows {
    // At d_head 128, O alone takes 64 registers: Q stays in shared memory and is read again for
    // every tile, which keeps the kernel within 128 registers (4 blocks, 25% occupancy) unspilled.
    static constexpr bool q_in_registers = D <= 64;
    std::uint32_t q[q_in_registers ? D / 16 : 1][4];  // Q (16, D) as A fragments, 16 columns each
    float o[D / 8][4];                                // O (16, D), unnormalised: (16, 8) accumulators
    float m[2];                                       // running max of rows g and g + 8 (log2 units), quad-uniform
    float l[2];                                       // running sum of this lane's weights of rows g and g + 8
    int end[2];                                       // keys [0, end) visible to rows g and g + 8
};

// Columns 16 kk .. 16 kk + 15 of Q (16, D), the warp's rows r0 .. r0 + 15 of q_tile, as an A fragment.
template <class Layout, class Tile>
__device__ __forceinline__ void load_q_slice(std::uint32_t (&q)[4], Tile& q_tile, int r0, int kk, int lane) {
    const int mat = lane / 8, r = r0 + 8 * (mat % 2) + lane % 8;  // lanes 8 mat ..: rows of matrix mat
    ldmatrix_x4(q, q_tile, r, Layout::col(r, 16 * kk + 8 * (mat / 2)));
}

// Q's A fragments into registers, where they stay (d_head 64).
template <int D, class Layout, class Tile>
__device__ __forceinline__ void load_q_fragments(WarpRows<D>& rows, Tile& q_tile, int r0, int lane) {
    if constexpr (WarpRows<D>::q_in_registers) {
        HEADWISE_UNROLL
        for (int kk = 0; kk < D / 16; ++kk) load_q_slice<Layout>(rows.q[kk], q_tile, r0, kk, lane);
    }
}

// One key tile, keys k0 .. k0 + Bc - 1, rows kr .. kr + Bc - 1 of k_tile and v_tile: S = Q K^T,
// the online softmax on S's registers, O += P V. `masked`: some key of the tile is past some
// row's end. scale2 = scale * log2(e): exp(x scale - m) = exp2(x scale2 - m'), m' in log2 units.
template <int D, int Bc, class T, class Layout, class QTile, class KTile, class VTile>
__device__ __forceinline__ void attend_tile(WarpRows<D>& rows, QTile& q_tile, int r0, KTile& k_tile, VTile& v_tile,
                                            int kr, int k0, bool masked, float scale2, int lane) {
    const int qd = lane % 4, mat = lane / 8;  // lanes 8 mat .. 8 mat + 7 address matrix mat of an x4
    float s[Bc / 8][4];                       // S (16, Bc): (16, 8) accumulators
    HEADWISE_UNROLL
    for (int n = 0; n < Bc / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    HEADWISE_UNROLL
    for (int kk = 0; kk < D / 16; ++kk) {
        std::uint32_t q[4];  // Q's columns 16 kk ..: kept since the first tile, or read again
        if constexpr (WarpRows<D>::q_in_registers) {
            HEADWISE_UNROLL
            for (int i = 0; i < 4; ++i) q[i] = rows.q[kk][i];
        } else {
            load_q_slice<Layout>(q, q_tile, r0, kk, lane);
        }
        HEADWISE_UNROLL
        for (int n = 0; n < Bc / 8; n += 2) {
            // Matrices: keys 8n.. at d 16kk and 16kk + 8, then keys 8(n + 1).. at the same d.
            const int r = kr + 8 * (n + mat / 2) + lane % 8;
            std::uint32_t kb[4];
            ldmatrix_x4(kb, k_tile, r, Layout::col(r, 16 * kk + 8 * (mat % 2)));
            const std::uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
            mma_m16n8k16<T>(s[n], q, b0, s[n]);
            mma_m16n8k16<T>(s[n + 1], q, b1, s[n + 1]);
        }
    }

    // Online softmax, rows g (half = 0) and g + 8 (half = 1): this lane has columns 2 qd, 2 qd + 1 of
    // every 8-key piece; the quad (lanes 4g .. 4g + 3) has the whole row.
    HEADWISE_UNROLL
    for (int half = 0; half < 2; ++half) {
        float mx = -INFINITY;
        HEADWISE_UNROLL
        for (int n = 0; n < Bc / 8; ++n) HEADWISE_UNROLL
        for (int e = 0; e < 2; ++e) {
            float x = s[n][2 * half + e] * scale2;
            if (masked && k0 + 8 * n + 2 * qd + e >= rows.end[half]) x = -INFINITY;
            s[n][2 * half + e] = x;
            mx = fmaxf(mx, x);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(rows.m[half], mx);
        const float m_safe = m_new == -INFINITY ? 0.0f : m_new;  // no key seen yet: every p is 0
        const float rescale = fast_exp2(rows.m[half] - m_safe);
        float sum = 0.0f;
        HEADWISE_UNROLL
        for (int n = 0; n < Bc / 8; ++n) HEADWISE_UNROLL
        for (int e = 0; e < 2; ++e) {
            const float p = fast_exp2(s[n][2 * half + e] - m_safe);
            s[n][2 * half + e] = p;
            sum += p;
        }
        rows.l[half] = rows.l[half] * rescale + sum;
        rows.m[half] = m_new;
        HEADWISE_UNROLL
        for (int n = 0; n < D / 8; ++n) rows.o[n][2 * half] *= rescale, rows.o[n][2 * half + 1] *= rescale;
    }

    // O += P V, 16 keys at a time: P's A fragment is S's accumulators 2j and 2j + 1, rounded.
    HEADWISE_UNROLL
    for (int j = 0; j < Bc / 16; ++j) {
        const std::uint32_t p[4] = {pack<T>(s[2 * j][0], s[2 * j][1]), pack<T>(s[2 * j][2], s[2 * j][3]),
                                    pack<T>(s[2 * j + 1][0], s[2 * j + 1][1]),
                                    pack<T>(s[2 * j + 1][2], s[2 * j + 1][3])};
        HEADWISE_UNROLL
        for (int n = 0; n < D / 8; n += 2) {
            // Matrices (transposed): keys 16j.. and 16j + 8.. at d 8n, then the same keys at d 8(n + 1).
            const int r = kr + 16 * j + 8 * (mat % 2) + lane % 8;
            std::uint32_t vb[4];
            ldmatrix_x4_trans(vb, v_tile, r, Layout::col(r, 8 * (n + mat / 2)));
            const std::uint32_t b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
            mma_m16n8k16<T>(rows.o[n], p, b0, rows.o[n]);
            mma_m16n8k16<T>(rows.o[n + 1], p, b1, rows.o[n + 1]);
        }
    }
}

// The warp's rows before the first tile: nothing seen, their visible key counts.
template <int D>
__device__ __forceinline__ void start_rows(WarpRows<D>& rows, int row, int n_keys, bool causal) {
    HEADWISE_UNROLL
    for (int n = 0; n < D / 8; ++n) rows.o[n][0] = rows.o[n][1] = rows.o[n][2] = rows.o[n][3] = 0.0f;
    HEADWISE_UNROLL
    for (int half = 0; half < 2; ++half)
        rows.m[half] = -INFINITY, rows.l[half] = 0.0f, rows.end[half] = key_end(row + 8 * half, n_keys, causal);
}

// out = O / l for the warp's rows g and g + 8 that exist; a row that saw no key gives zeros.
template <int D>
__device__ __forceinline__ void write_rows(WarpRows<D>& rows, global_ptr<float> out, std::size_t head, int row, int N,
                                           int lane) {
    const int qd = lane % 4;
    HEADWISE_UNROLL
    for (int half = 0; half < 2; ++half) {
        float l = rows.l[half];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        const int i = row + 8 * half;
        if (i >= N) continue;
        const std::size_t at = (head + std::size_t(i)) * D + 2 * qd;
        HEADWISE_UNROLL
        for (int n = 0; n < D / 8; ++n) {
            out[at + 8 * n] = rows.o[n][2 * half] * inv;
            out[at + 8 * n + 1] = rows.o[n][2 * half + 1] * inv;
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
    using Shape = FlashShape<D>;
    constexpr int Br = Shape::rows, Bc = Shape::cols, LD = Shape::padded;
    __shared__ shared_tile<T, Br, LD> q_tile;  // (Br, D) + 8 halves of padding per row
    __shared__ shared_tile<T, Bc, LD> k_tile;  // (Bc, D) + padding
    __shared__ shared_tile<T, Bc, LD> v_tile;  // (Bc, D) + padding

    const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
    const int N = a.seq;
    const HeadBlock<T> bh = head_block<D, Br>(q, k, v, key_len, a, query_block(a));
    const int q0 = bh.q0, n_keys = bh.n_keys, block_end = bh.block_end;
    const int row = q0 + 16 * warp + lane / 4;  // this lane's row g; g + 8 is row + 8
    const int warp_first = q0 + 16 * warp, warp_last = warp_first + 15;
    const int warp_min_end = key_end(warp_first, n_keys, a.causal);
    const float scale2 = a.scale * log2_e;

    load_rows<D, Br, Shape::threads>(q_tile, bh.q, q0, N, t);  // rows past N are zeros
    __syncthreads();
    WarpRows<D> rows;
    load_q_fragments<D, Padded>(rows, q_tile, 16 * warp, lane);
    start_rows(rows, row, n_keys, a.causal);

    for (int k0 = 0; k0 < block_end; k0 += Bc) {
        load_kv_rows<D, Bc, Shape::threads>(k_tile, v_tile, bh.k, bh.v, k0, block_end, t);  // zeros past the end
        __syncthreads();
        if (!a.causal || k0 <= warp_last)  // a tile entirely above the warp's rows: nothing to see
            attend_tile<D, Bc, T, Padded>(rows, q_tile, 16 * warp, k_tile, v_tile, 0, k0, k0 + Bc > warp_min_end,
                                          scale2, lane);
        __syncthreads();  // the tiles are free for the next ones
    }
    write_rows(rows, out, bh.head, row, N, lane);
}

// Version 7: version 6 with K/V tiles double-buffered through cp.async into swizzled tiles.
// Waits = false drops the cp.async.wait_group before each tile: the mistake the emulator reports
// (a read of a tile some copy may still be writing), for the tests and the lesson.
template <int D, class T, bool Waits = true>
__global__ void __launch_bounds__(128, 4)
    attention_pipelined(global_ptr<const T> q, global_ptr<const T> k, global_ptr<const T> v,
                        global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    using Shape = FlashShape<D>;
    using Layout = Swizzled<D>;
    constexpr int Br = Shape::rows, Bc = Shape::cols, C = Shape::chunks;
    __shared__ shared_tile<T, Br, D> q_tile;      // (Br, D), swizzled
    __shared__ shared_tile<T, 2 * Bc, D> k_tile;  // two stages of (Bc, D), swizzled
    __shared__ shared_tile<T, 2 * Bc, D> v_tile;  // two stages of (Bc, D), swizzled

    const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
    const int N = a.seq;
    const HeadBlock<T> bh = head_block<D, Br>(q, k, v, key_len, a, query_block(a));
    const int q0 = bh.q0, n_keys = bh.n_keys, block_end = bh.block_end;
    const int n_tiles = (block_end + Bc - 1) / Bc;
    const int row = q0 + 16 * warp + lane / 4;
    const int warp_first = q0 + 16 * warp, warp_last = warp_first + 15;
    const int warp_min_end = key_end(warp_first, n_keys, a.causal);
    const float scale2 = a.scale * log2_e;

    // Key tile `tile` into stage `tile % 2`: each thread starts its share of 16-byte copies.
    const auto fetch = [&](int tile) {
        const int k0 = tile * Bc, stage = (tile % 2) * Bc;
        for (int e = t; e < Bc * C; e += Shape::threads) {
            const int r = e / C, c = e % C;
            const bool real = k0 + r < block_end;
            const std::size_t from = std::size_t(k0 + r) * D + 8 * c;
            cp_async_16(k_tile, stage + r, 8 * swizzle<C>(stage + r, c), bh.k, from, real);
            cp_async_16(v_tile, stage + r, 8 * swizzle<C>(stage + r, c), bh.v, from, real);
        }
    };

    WarpRows<D> rows;
    start_rows(rows, row, n_keys, a.causal);
    if (n_tiles > 0) {
        for (int e = t; e < Br * C; e += Shape::threads) {  // Q, in the first group with tile 0
            const int r = e / C, c = e % C;
            cp_async_16(q_tile, r, 8 * swizzle<C>(r, c), bh.q, std::size_t(q0 + r) * D + 8 * c, q0 + r < N);
        }
        fetch(0);
        cp_async_commit();
    }
    for (int tile = 0; tile < n_tiles; ++tile) {
        if (tile + 1 < n_tiles) {  // the next tile's copies fly while this one is multiplied
            fetch(tile + 1);
            cp_async_commit();
            if constexpr (Waits) cp_async_wait<1>();  // every group but the newest: this tile has landed
        } else {
            if constexpr (Waits) cp_async_wait<0>();
        }
        __syncthreads();  // ... for every thread's copies
        if (tile == 0) load_q_fragments<D, Layout>(rows, q_tile, 16 * warp, lane);
        const int k0 = tile * Bc;
        if (!a.causal || k0 <= warp_last)
            attend_tile<D, Bc, T, Layout>(rows, q_tile, 16 * warp, k_tile, v_tile, (tile % 2) * Bc, k0,
                                          k0 + Bc > warp_min_end, scale2, lane);
        __syncthreads();  // this stage is free for tile + 2
    }
    write_rows(rows, out, bh.head, row, N, lane);
}

}  // namespace headwise::kernels
