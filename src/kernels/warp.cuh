// kernels/warp.cuh -- version 4: warp-cooperative online attention.
//
// Versions 1-3 give every query row to one thread, which then does all D multiply-adds of every
// score alone. A GPU schedules threads in warps of 32 that issue together, so here the unit of
// work is the warp: warp w of a block owns rows_per_warp query rows, and its 32 lanes share the
// work of each row two ways:
//
//   scores   lanes split the keys: lane j computes s_j = q_i . k_j for key k0 + j of the tile
//            (Bc = 32 keys, one per lane). The row maximum and the sum of exponentials are then
//            warp reductions: five __shfl_xor_sync butterfly steps each (warp_reduce.cuh).
//   output   lanes split d_head: lane L owns output columns L, L + 32, ... For each key j the
//            weight p_j is broadcast from lane j with __shfl_sync, and every lane adds p_j v_j[c]
//            for its own columns.
//
// The running maximum, normaliser and rescaling are version 3's, once per tile. K and V tiles go
// through shared memory as in version 3, and so do the block's queries (every lane needs all of
// its row's q for a dot product: it reads them as broadcasts, one word for the whole warp).
//
// Bank conflicts. Shared memory serves a warp's request from 32 banks of 4-byte words; two lanes
// wanting different words of one bank wait for each other. In the score loop all lanes read
// column c of *different* key rows: with rows of D floats (D a multiple of 32) those words are
// D apart, all in bank c % 32 -- a 32-way conflict on every read. One padding float per row
// (k_tile is (Bc, D + 1)) moves row j's word to bank (j + c) % 32: all different, conflict-free.
// v_tile needs no padding (lanes read consecutive columns of one row), nor does q_tile (every lane
// reads the same word). KPad = 0 is the unpadded layout, kept for the lesson and the tests.
#pragma once

#include "kernels/portable.cuh"
#include "kernels/warp_reduce.cuh"

namespace headwise::kernels {

template <int D>
struct WarpShape {
    static constexpr int warps = 4;                         // per block
    static constexpr int threads = 32 * warps;              // per block
    static constexpr int rows_per_warp = D <= 64 ? 16 : 4;  // query rows owned by one warp
    static constexpr int rows = warps * rows_per_warp;      // Br: query rows per block
    static constexpr int cols = 32;                         // Bc: keys per tile, one per lane
    static constexpr int columns_per_lane = (D + 31) / 32;  // output columns a lane owns
    static constexpr std::size_t shared_bytes(int k_pad) {  // q_tile + k_tile + v_tile
        return sizeof(float) * (std::size_t(rows) * D + std::size_t(cols) * (D + k_pad) + std::size_t(cols) * D);
    }
};

// grid (ceil(N / Br), H, B), block (128): warp w of block (bx, h, b) owns query rows
// bx * Br + w * rows_per_warp .. + rows_per_warp - 1.
//   q, k, v, out  (B, H, N, D)
//   key_len       (B)
template <int D, int KPad = 1>
__global__ void attention_warp(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                               global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    using Shape = WarpShape<D>;
    constexpr int Br = Shape::rows, Bc = Shape::cols, RW = Shape::rows_per_warp, CL = Shape::columns_per_lane;
    constexpr unsigned all_lanes = 0xffffffffu;
    __shared__ shared_tile<float, Br, D> q_tile;         // (Br, D): the block's query rows, pre-scaled
    __shared__ shared_tile<float, Bc, D + KPad> k_tile;  // (Bc, D) + KPad padding columns
    __shared__ shared_tile<float, Bc, D> v_tile;         // (Bc, D)

    const int t = static_cast<int>(threadIdx.x);
    const int warp = t / 32, lane = t % 32;
    const int N = a.seq;
    const int q0 = static_cast<int>(blockIdx.x) * Br;  // the block's first query row
    const int h = static_cast<int>(blockIdx.y);
    const int b = static_cast<int>(blockIdx.z);
    const std::size_t head = (static_cast<std::size_t>(b) * a.heads + h) * N;
    const global_ptr<const float> q_bh = slice(q, head * D, static_cast<std::size_t>(N) * D);  // (N, D)
    const global_ptr<const float> k_bh = slice(k, head * D, static_cast<std::size_t>(N) * D);  // (N, D)
    const global_ptr<const float> v_bh = slice(v, head * D, static_cast<std::size_t>(N) * D);  // (N, D)
    const int n_keys = key_len[b];
    const int block_end = key_end(imin(q0 + Br, N) - 1, n_keys, a.causal);  // keys any row here may see

    // The block's queries, copied by all threads (consecutive threads, consecutive floats). Rows
    // past N are zeros: they are never used for an output.
    for (int e = t; e < Br * D; e += Shape::threads) {
        const int r = e / D, c = e % D;
        float x = 0.0f;
        if (q0 + r < N) x = q_bh[(q0 + r) * D + c] * a.scale;
        q_tile(r, c) = x;
    }

    float m[RW], l[RW], acc[RW][CL];  // per row of this warp: running max, normaliser, output columns
    HEADWISE_UNROLL
    for (int rr = 0; rr < RW; ++rr) {
        m[rr] = -INFINITY, l[rr] = 0.0f;
        HEADWISE_UNROLL
        for (int u = 0; u < CL; ++u) acc[rr][u] = 0.0f;
    }

    for (int k0 = 0; k0 < block_end; k0 += Bc) {
        for (int e = t; e < Bc * D; e += Shape::threads) {
            const int r = e / D, c = e % D;
            if (k0 + r < block_end) {
                k_tile(r, c) = k_bh[(k0 + r) * D + c];
                v_tile(r, c) = v_bh[(k0 + r) * D + c];
            }
        }
        __syncthreads();  // the tile (and, the first time, the queries) are complete

        HEADWISE_UNROLL
        for (int rr = 0; rr < RW; ++rr) {
            const int r = warp * RW + rr, i = q0 + r;
            const int end = i < N ? key_end(i, n_keys, a.causal) : 0;
            const int cols = imin(Bc, end - k0);  // this row's visible keys in the tile
            if (cols <= 0) continue;              // the same in every lane: the warp stays together

            // Lanes split the keys: lane j scores key k0 + j.
            float s = -INFINITY;
            if (lane < cols) {
                float dot = 0.0f;
                for (int c = 0; c < D; ++c) dot += q_tile(r, c) * k_tile(lane, c);
                s = dot;
            }
            const float m_new = fmaxf(m[rr], warp_max(s));  // every lane gets the row's maximum
            const float p = lane < cols ? expf(s - m_new) : 0.0f;
            const float rescale = expf(m[rr] - m_new);  // 0 on the row's first tile
            l[rr] = l[rr] * rescale + warp_sum(p);
            HEADWISE_UNROLL
            for (int u = 0; u < CL; ++u) acc[rr][u] *= rescale;

            // Lanes split d_head: lane L owns columns L, L + 32, ...; p_j comes from lane j.
            for (int j = 0; j < cols; ++j) {
                const float p_j = __shfl_sync(all_lanes, p, j);
                HEADWISE_UNROLL
                for (int u = 0; u < CL; ++u) {
                    const int c = lane + 32 * u;
                    if (c < D) acc[rr][u] += p_j * v_tile(j, c);
                }
            }
            m[rr] = m_new;
        }
        __syncthreads();  // every warp is done with the tile before the next one overwrites it
    }

    HEADWISE_UNROLL
    for (int rr = 0; rr < RW; ++rr) {
        const int i = q0 + warp * RW + rr;
        if (i >= N) continue;
        const int end = key_end(i, n_keys, a.causal);
        const global_ptr<float> out_i = slice(out, (head + i) * D, D);  // (D)
        HEADWISE_UNROLL
        for (int u = 0; u < CL; ++u) {
            const int c = lane + 32 * u;  // consecutive lanes, consecutive columns: coalesced
            if (c < D) out_i[c] = end > 0 ? acc[rr][u] / l[rr] : 0.0f;
        }
    }
}

}  // namespace headwise::kernels
