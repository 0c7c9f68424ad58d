// kernels/warp.cuh -- version 4: the lanes of a warp share rows and keys, each a small block in registers.
//
// Version 3 gives each thread one query row. For every multiply-add it reads one word of K or V
// from shared memory: as many shared-memory loads as FMAs, and the FMA units wait on the loads.
// The cure is the one every fast matrix product uses: let each thread own a small *block* of the
// result, so that one value it loads is used several times from a register.
//
// A block of 128 threads owns Br = 64 query rows and walks the keys in tiles of Bc = 32. Thread t
// belongs to row group g = t / 8 (rows 4g .. 4g + 3 of the block) and is lane x = t % 8 of the
// 8 threads that share those rows:
//
//   scores   S (4 rows x 4 keys) per thread: keys x, x + 8, x + 16, x + 24 of the tile. For each
//            d_head column it loads 4 query values and 4 key values and does 16 multiply-adds
//            (version 3: 1 load per multiply-add).
//   softmax  the row maximum over the tile is a reduction over the 8 threads of the row group:
//            three __shfl_xor_sync steps. Each thread keeps its own part of the normaliser l and
//            adds the 8 parts only at the end.
//   output   O (4 rows x d_head / 8 columns) per thread. P goes through shared memory (the
//            thread needs the weights of all 32 keys of its rows, it computed 4); then for each
//            key it loads 4 weights and d_head / 8 values for 4 * d_head / 8 multiply-adds.
//
// Loads are 16 bytes wide on a GPU (4 floats, LDS.128: load4 below): in the score loop a thread
// issues 8 loads per 64 multiply-adds, in the output loop 1 + d_head / 32 per 4 d_head / 8. The
// query tile and P are stored transposed, (d_head, Br) and (Bc, Br), so a thread's 4 rows are 4
// consecutive words; K is stored as rows padded by 4 floats, (Bc, d_head + 4).
//
// Bank conflicts. Shared memory serves a warp from 32 banks of 4-byte words. In the score loop
// the 8 lanes of a row group read column c of keys x, x + 8, ...: with rows of d_head floats
// (a multiple of 32) those words all sit in bank c % 32, an 8-way conflict on every read. Four
// padding floats per row move key x's word to bank (c + 4 x) % 32: 8 different banks (and, read 4
// floats at a time, 8 different 16-byte slots). KPad = 0 is the unpadded layout, kept for the
// lesson and the tests.
//
// The running maximum, normaliser and rescaling are version 3's, once per tile, now per thread
// for its 4 rows. With d_head 128, 64 rows would not fit the 48 KiB of static shared memory: the
// block is 64 threads owning 32 rows, with tiles of 16 keys (2 per thread).
#pragma once

#include "kernels/head_block.cuh"
#include "kernels/offsets.cuh"
#include "kernels/portable.cuh"
#include "kernels/warp_reduce.cuh"

namespace headwise::kernels {

template <int D>
struct WarpShape {
    static constexpr int group = 8;                                     // threads sharing a group of rows
    static constexpr int rows_per_thread = 4;                           // TM
    static constexpr int rows = D <= 64 ? 64 : 32;                      // Br: query rows per block
    static constexpr int cols = D <= 64 ? 32 : 16;                      // Bc: keys per tile
    static constexpr int keys_per_thread = cols / group;                // TN: keys x, x + 8, ...
    static constexpr int threads = group * rows / rows_per_thread;      // per block
    static constexpr int column_width = D / group < 4 ? D / group : 4;  // output columns per load
    static constexpr int columns_per_thread = D / group;                // output columns a thread owns
    static constexpr int min_blocks = D <= 64 ? 5 : 1;
    static constexpr int pad = 4;  // floats after each row of q_t, k_tile, p_t (16-byte aligned)
    __host__ __device__ static constexpr std::size_t shared_bytes(int k_pad) {  // q_t + k_tile + v_tile + p_t
        return sizeof(float) * (std::size_t(D) * (rows + pad) + std::size_t(cols) * (D + k_pad) +
                                std::size_t(cols) * D + std::size_t(cols) * (rows + pad));
    }
    // Output column of the thread's u-th column for lane x: groups of column_width consecutive
    // columns, the 8 lanes side by side, so that 8 lanes read 8 * column_width consecutive words.
    __host__ __device__ static constexpr int column(int x, int u) {
        return (u / column_width) * (group * column_width) + x * column_width + u % column_width;
    }
    static_assert(threads % 32 == 0 && 32 % group == 0, "whole warps, each of whole row groups");
    static_assert(keys_per_thread * group == cols, "the 8 lanes of a group split a tile's keys evenly");
    static_assert(D % group == 0 && columns_per_thread % column_width == 0, "and the output's columns");
};

// Four consecutive floats of row r of a shared tile, from column c (a multiple of 4 in a row
// whose length is a multiple of 4): one 16-byte load on a GPU; on the emulator four counted
// 4-byte reads, attributed to the caller's line (each call site is its own warp request).
#ifdef __CUDACC__
template <class Tile>
__device__ __forceinline__ void load4(Tile& tile, int r, int c, float (&x)[4]) {
    const float4 f = *reinterpret_cast<const float4*>(tile.ptr(r, c));
    x[0] = f.x, x[1] = f.y, x[2] = f.z, x[3] = f.w;
}
#else
template <class Tile>
void load4(Tile& tile, int r, int c, float (&x)[4], std::source_location where = std::source_location::current()) {
    for (int u = 0; u < 4; ++u) x[u] = tile(r, c + u, where);
}
#endif

// The largest and the sum of x over the 8 lanes of a row group (lanes that differ in their low
// three bits): three butterfly steps, the result in every lane of the group.
__device__ __forceinline__ float group_max(float x) { return lanes_max<8>(x); }
__device__ __forceinline__ float group_sum(float x) { return lanes_sum<8>(x); }

// What one thread carries from tile to tile for each of its TM rows: the keys the row may see
// (0 for a row past N), its running max, its part of the normaliser, its CW output columns.
template <int D>
struct WarpThreadRows {
    static constexpr int TM = WarpShape<D>::rows_per_thread, CW = WarpShape<D>::columns_per_thread;
    int end[TM];
    float m[TM], l[TM], acc[TM][CW];
};

// The block's queries, transposed and pre-scaled into q_t (D, Br): consecutive threads take
// consecutive rows of one column, so their stores fill consecutive words. Rows past N are zeros,
// never used for an output.
template <int D, class QTile>
__device__ __forceinline__ void load_queries(QTile& q_t, const HeadBlock<float>& blk, const AttentionArgs& a, int t) {
    using Shape = WarpShape<D>;
    for (int e = t; e < Shape::rows * D; e += Shape::threads) {
        const int r = e % Shape::rows, c = e / Shape::rows;
        float qx = 0.0f;
        if (blk.q0 + r < a.seq) qx = blk.q[at(blk.q0 + r, D, c)] * a.scale;
        q_t(c, r) = qx;
    }
}

// The thread's rows i0 .. i0 + 3 before the first tile: nothing seen.
template <int D>
__device__ __forceinline__ void start_rows(WarpThreadRows<D>& rows, int i0, int n_keys, const AttentionArgs& a) {
    HEADWISE_UNROLL
    for (int ii = 0; ii < rows.TM; ++ii) {
        const int i = i0 + ii;
        rows.end[ii] = i < a.seq ? key_end(i, n_keys, a.causal) : 0;
        rows.m[ii] = -INFINITY, rows.l[ii] = 0.0f;
        HEADWISE_UNROLL
        for (int u = 0; u < rows.CW; ++u) rows.acc[ii][u] = 0.0f;
    }
}

// Keys k0 .. k0 + Bc - 1 into k_tile and v_tile; rows past `tile_rows` (no row of the block may
// see them) are zeros.
template <int D, class KTile, class VTile>
__device__ __forceinline__ void load_kv_tile(KTile& k_tile, VTile& v_tile, const HeadBlock<float>& blk, int k0,
                                             int tile_rows, int t) {
    using Shape = WarpShape<D>;
    for (int e = t; e < Shape::cols * D; e += Shape::threads) {
        const int r = e / D, c = e % D;
        float kx = 0.0f, vx = 0.0f;
        if (r < tile_rows) kx = blk.k[at(k0 + r, D, c)], vx = blk.v[at(k0 + r, D, c)];
        k_tile(r, c) = kx;
        v_tile(r, c) = vx;
    }
}

// One key tile for the thread's rows r0 .. r0 + 3 (lane x of its row group): S = Q K^T for 4 rows
// and 4 keys, the online softmax with the row group's max, P through shared memory, O += P V.
template <int D, class QTile, class KTile, class VTile, class PTile>
__device__ __forceinline__ void attend_tile(WarpThreadRows<D>& rows, QTile& q_t, KTile& k_tile, VTile& v_tile,
                                            PTile& p_t, int k0, int tile_rows, int r0, int x) {
    using Shape = WarpShape<D>;
    constexpr int TM = Shape::rows_per_thread, TN = Shape::keys_per_thread, CW = Shape::columns_per_thread;
    constexpr int W = Shape::column_width, G = Shape::group;
    // S = Q K^T for the thread's 4 rows and 4 keys, 4 columns of d_head at a time.
    float s[TM][TN];
    HEADWISE_UNROLL
    for (int ii = 0; ii < TM; ++ii) {
        HEADWISE_UNROLL
        for (int jj = 0; jj < TN; ++jj) s[ii][jj] = 0.0f;
    }
    for (int c0 = 0; c0 < D; c0 += 4) {
        float kx[TN][4];
        HEADWISE_UNROLL
        for (int jj = 0; jj < TN; ++jj) load4(k_tile, x + G * jj, c0, kx[jj]);
        HEADWISE_UNROLL
        for (int cc = 0; cc < 4; ++cc) {
            float qx[TM];
            load4(q_t, c0 + cc, r0, qx);
            HEADWISE_UNROLL
            for (int ii = 0; ii < TM; ++ii) {
                HEADWISE_UNROLL
                for (int jj = 0; jj < TN; ++jj) s[ii][jj] += qx[ii] * kx[jj][cc];
            }
        }
    }

    // Online softmax, per row: the tile's maximum over the row group, then the weights.
    HEADWISE_UNROLL
    for (int ii = 0; ii < TM; ++ii) {
        float m_tile = -INFINITY;
        HEADWISE_UNROLL
        for (int jj = 0; jj < TN; ++jj) {
            if (k0 + x + G * jj >= rows.end[ii]) s[ii][jj] = -INFINITY;  // masked: causal or padding
            m_tile = fmaxf(m_tile, s[ii][jj]);
        }
        const float m_new = fmaxf(rows.m[ii], group_max(m_tile));
        const float m_safe = m_new == -INFINITY ? 0.0f : m_new;  // a row that has seen no key yet
        const float rescale = expf(rows.m[ii] - m_safe);         // 0 on the row's first tile
        rows.l[ii] *= rescale;
        HEADWISE_UNROLL
        for (int u = 0; u < CW; ++u) rows.acc[ii][u] *= rescale;
        HEADWISE_UNROLL
        for (int jj = 0; jj < TN; ++jj) {
            const float p = expf(s[ii][jj] - m_safe);  // 0 for a masked key
            rows.l[ii] += p;
            p_t(x + G * jj, r0 + ii) = p;
        }
        rows.m[ii] = m_new;
    }
    __syncwarp();  // P's rows of this group are written by the 8 lanes of one warp

    // O += P V: per key, 4 weights and CW values make 4 * CW multiply-adds.
    for (int j = 0; j < tile_rows; ++j) {
        float pj[TM];
        load4(p_t, j, r0, pj);
        HEADWISE_UNROLL
        for (int u0 = 0; u0 < CW; u0 += W) {
            float vx[4];
            if constexpr (W == 4) {
                load4(v_tile, j, Shape::column(x, u0), vx);
            } else {
                HEADWISE_UNROLL
                for (int c = 0; c < W; ++c) vx[c] = v_tile(j, Shape::column(x, u0 + c));
            }
            HEADWISE_UNROLL
            for (int ii = 0; ii < TM; ++ii) {
                HEADWISE_UNROLL
                for (int c = 0; c < W; ++c) rows.acc[ii][u0 + c] += pj[ii] * vx[c];
            }
        }
    }
}

// out = O / l for the thread's rows i0 .. i0 + 3 that exist, l the sum of the row group's 8 parts;
// a row that saw no key gives zeros.
template <int D>
__device__ __forceinline__ void write_rows(WarpThreadRows<D>& rows, global_ptr<float> out, std::size_t head, int i0,
                                           int N, int x) {
    HEADWISE_UNROLL
    for (int ii = 0; ii < rows.TM; ++ii) {
        const float l_row = group_sum(rows.l[ii]);  // the 8 parts of the normaliser
        const int i = i0 + ii;
        if (i >= N) continue;
        const global_ptr<float> out_i = slice(out, at(head + i, D), D);  // (D)
        HEADWISE_UNROLL
        for (int u = 0; u < rows.CW; ++u)
            out_i[WarpShape<D>::column(x, u)] = rows.end[ii] > 0 ? rows.acc[ii][u] / l_row : 0.0f;
    }
}

// grid (ceil(N / Br), H, B), block (threads): thread t of block (bx, h, b) owns query rows
// bx * Br + 4 (t / 8) .. + 3, keys t % 8 + 8 jj of each tile, output columns column(t % 8, u).
//   q, k, v, out  (B, H, N, D)
//   key_len       (B)
template <int D, int KPad = 4>
__global__ void HEADWISE_LAUNCH_BOUNDS(WarpShape<D>::threads, WarpShape<D>::min_blocks)
    attention_warp(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                   global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    using Shape = WarpShape<D>;
    constexpr int Br = Shape::rows, Bc = Shape::cols, TM = Shape::rows_per_thread, G = Shape::group, P = Shape::pad;
    static_assert(D % 4 == 0 && (D + KPad) % 4 == 0 && TM == 4, "16-byte loads of 4 floats");
    static_assert(Shape::shared_bytes(KPad) <= 48 * 1024, "the tiles fit 48 KiB of static shared memory");
    __shared__ shared_tile<float, D, Br + P> q_t;        // (D, Br): the block's queries, transposed, pre-scaled
    __shared__ shared_tile<float, Bc, D + KPad> k_tile;  // (Bc, D) + KPad padding columns
    __shared__ shared_tile<float, Bc, D> v_tile;         // (Bc, D)
    __shared__ shared_tile<float, Bc, Br + P> p_t;       // (Bc, Br): the weights P, transposed

    const int t = static_cast<int>(threadIdx.x);
    const int x = t % G, r0 = TM * (t / G);  // lane in the row group, first of the thread's rows
    const HeadBlock<float> blk = head_block<D, Br>(q, k, v, key_len, a, static_cast<int>(blockIdx.x));
    load_queries<D>(q_t, blk, a, t);
    WarpThreadRows<D> rows;
    start_rows(rows, blk.q0 + r0, blk.n_keys, a);
    for (int k0 = 0; k0 < blk.block_end; k0 += Bc) {
        const int tile_rows = imin(Bc, blk.block_end - k0);  // key rows of this tile anyone may see
        load_kv_tile<D>(k_tile, v_tile, blk, k0, tile_rows, t);
        __syncthreads();  // the tile (and, the first time, the queries) are complete
        attend_tile(rows, q_t, k_tile, v_tile, p_t, k0, tile_rows, r0, x);
        __syncthreads();  // every thread is done with the tiles before the next ones overwrite them
    }
    write_rows(rows, out, blk.head, blk.q0 + r0, a.seq, x);
}

}  // namespace headwise::kernels
