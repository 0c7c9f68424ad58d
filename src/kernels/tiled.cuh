// kernels/tiled.cuh -- version 3: flash-style tiling, K and V staged in shared memory.
//
// Version 2 still reads every key and value row from global memory once *per query*: N times.
// Here a block of Br threads owns Br consecutive query rows (one each, as before) and the block
// walks the keys in tiles of Bc rows. For each tile, the Br threads first copy K and V rows
// k0 .. k0+Bc-1 into __shared__ memory together, wait for each other (__syncthreads), and then
// every thread reads the whole tile from there. Each key and value row now leaves global memory
// once per *block* of Br queries: Br times less traffic than version 2.
//
// The loop order is FlashAttention-2's: queries outside (one block each, all in parallel), keys
// inside; the running maximum, normaliser and unnormalised output stay in registers, get rescaled
// at most once per chunk of 4 keys, only when the maximum grows (rarely, after the first keys of
// a row), and are divided by the normaliser only at the very end.
// With the causal mask, a tile whose first key lies beyond the block's last query row is masked
// for every row in the block: those tiles are never loaded.
#pragma once

#include "kernels/head_block.cuh"
#include "kernels/offsets.cuh"
#include "kernels/portable.cuh"

namespace headwise::kernels {

template <int D>
struct TiledShape {
    static constexpr int rows = 64;                 // Br: query rows per block = threads per block
    static constexpr int cols = D <= 64 ? 64 : 32;  // Bc: key rows per tile (2 tiles stay at 32 KiB)
    static constexpr int chunk = 4;                 // Bs: scores held in registers at once
    // 6 blocks of 64 threads per SM: at most 168 registers each (65536 per SM). At d_head 128 the
    // query row and the output alone are 256 floats: no bound helps, the rest spills.
    static constexpr int min_blocks = D <= 64 ? 6 : 1;
    static constexpr std::size_t shared_bytes = 2 * sizeof(float) * cols * D;  // k_tile + v_tile
};

// The body of attention_tiled and attention_tiled_lse (below): with WithLse, each row's
// log-sum-exp of its scaled scores, lse_i = m_i + log(l_i), goes to lse (B, H, N) as well -- the
// one number per row from which FlashAttention's backward recomputes P (kernels/backward_flash.cuh).
template <int D, bool WithLse>
__device__ __forceinline__ void tiled_forward(global_ptr<const float> q, global_ptr<const float> k,
                                              global_ptr<const float> v, global_ptr<const int> key_len,
                                              global_ptr<float> out, global_ptr<float> lse, AttentionArgs a) {
    constexpr int Br = TiledShape<D>::rows;
    constexpr int Bc = TiledShape<D>::cols;
    constexpr int Bs = TiledShape<D>::chunk;
    __shared__ float k_tile[Bc][D];  // (Bc, D): key rows k0 .. k0 + Bc - 1
    __shared__ float v_tile[Bc][D];  // (Bc, D): the matching value rows
    static_assert(sizeof(k_tile) + sizeof(v_tile) == TiledShape<D>::shared_bytes);

    // The block's head (b, h) = (blockIdx.z, blockIdx.y): its (N, D) slices of q, k, v, its first
    // query row q0 and the keys [0, block_end) any of its rows may see.
    const HeadBlock<float> blk = head_block<D, Br>(q, k, v, key_len, a, static_cast<int>(blockIdx.x));
    const int N = a.seq, block_end = blk.block_end;
    const int i = blk.q0 + static_cast<int>(threadIdx.x);  // this thread's query row
    const bool has_row = i < N;  // the last block may have spare threads: they still help load tiles
    const int end = has_row ? key_end(i, blk.n_keys, a.causal) : 0;  // keys this row may see

    float q_i[D];  // (D), this thread's query row, pre-scaled
    float acc[D];  // (D), unnormalised output
    float m = -INFINITY, l = 0.0f;
    for (int c = 0; c < D; ++c) q_i[c] = 0.0f, acc[c] = 0.0f;
    if (has_row) {
        const global_ptr<const float> q_row = slice(blk.q, at(i, D), D);  // (D), row i
        for (int c = 0; c < D; ++c) q_i[c] = q_row[c] * a.scale;
    }

    for (int k0 = 0; k0 < block_end; k0 += Bc) {
        // All Br threads copy the tile together: consecutive threads take consecutive elements,
        // so each warp's loads fall on neighbouring addresses (coalesced on a GPU).
        for (int e = static_cast<int>(threadIdx.x); e < Bc * D; e += Br) {
            const int r = e / D, c = e % D;
            if (k0 + r < block_end) {
                k_tile[r][c] = blk.k[at(k0 + r, D, c)];
                v_tile[r][c] = blk.v[at(k0 + r, D, c)];
            }
        }
        __syncthreads();  // the whole tile is in shared memory before anyone reads it

        // This row's visible keys in the tile (<= 0: none), scored Bs at a time. The scores of a
        // chunk live in registers only if every index into s is known when compiling: the chunk
        // loop is unrolled and a key past `cols` is masked, not skipped. (Written with a loop
        // bound of `cols`, s[j] needs a run-time index: the compiler puts s on the stack, in
        // local memory, and every score makes a round trip through the L1 cache.)
        const int cols = imin(Bc, end - k0);
        for (int j0 = 0; j0 < cols; j0 += Bs) {
            float s[Bs];  // (Bs), this row's scores against keys k0 + j0 ..
            float m_chunk = -INFINITY;
            HEADWISE_UNROLL
            for (int jj = 0; jj < Bs; ++jj) {
                float dot = -INFINITY;
                if (j0 + jj < cols) {
                    dot = 0.0f;
                    for (int c = 0; c < D; ++c) dot += q_i[c] * k_tile[j0 + jj][c];
                }
                s[jj] = dot;
                m_chunk = fmaxf(m_chunk, dot);
            }
            const float m_new = fmaxf(m, m_chunk);      // finite: the chunk has a visible key
            if (m_new > m) {                            // rarely, after the first keys of a row
                const float rescale = expf(m - m_new);  // 0 on the first chunk
                l *= rescale;
                for (int c = 0; c < D; ++c) acc[c] *= rescale;
            }
            HEADWISE_UNROLL
            for (int jj = 0; jj < Bs; ++jj) {
                if (j0 + jj >= cols) continue;  // a masked key (its row of v_tile may be stale)
                const float p = expf(s[jj] - m_new);
                l += p;
                for (int c = 0; c < D; ++c) acc[c] += p * v_tile[j0 + jj][c];
            }
            m = m_new;
        }
        __syncthreads();  // nobody overwrites the tile with the next one while others still read it
    }

    if (has_row) {
        const global_ptr<float> out_i = slice(out, at(blk.head + i, D), D);  // (D)
        for (int c = 0; c < D; ++c) out_i[c] = end > 0 ? acc[c] / l : 0.0f;
        // A fully masked row has no scores: -inf, the log of an empty sum (its backward reads none).
        if constexpr (WithLse) lse[blk.head + i] = end > 0 ? m + logf(l) : -INFINITY;
    }
}

// grid (ceil(N / Br), H, B), block (Br): thread x of block (bx, h, b) is query row bx * Br + x.
//   q, k, v, out  (B, H, N, D)
//   key_len       (B)
template <int D>
__global__ void HEADWISE_LAUNCH_BOUNDS(TiledShape<D>::rows, TiledShape<D>::min_blocks)
    attention_tiled(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                    global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    tiled_forward<D, false>(q, k, v, key_len, out, global_ptr<float>(), a);
}

// The same, and the log-sum-exp of every row: the forward that FlashAttention-2's backward needs.
//   lse           (B, H, N)
template <int D>
__global__ void HEADWISE_LAUNCH_BOUNDS(TiledShape<D>::rows, TiledShape<D>::min_blocks)
    attention_tiled_lse(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                        global_ptr<const int> key_len, global_ptr<float> out, global_ptr<float> lse, AttentionArgs a) {
    tiled_forward<D, true>(q, k, v, key_len, out, lse, a);
}

}  // namespace headwise::kernels
