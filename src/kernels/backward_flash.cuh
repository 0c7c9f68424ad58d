// kernels/backward_flash.cuh -- backward version 2: FlashAttention-2's, P recomputed, no N x N buffer.
//
// The same gradients as version 1 (backward_naive.cuh), with the loops turned inside out:
//
//   dV_j = sum_i P_ij dO_i                  P_ij = exp(S_ij - lse_i),  S_ij = q_i . k_j * scale
//   dK_j = sum_i dS_ij q_i * scale          dS_ij = P_ij (dP_ij - delta_i),  dP_ij = dO_i . v_j
//   dQ_i = sum_j dS_ij k_j * scale          delta_i = rowsum(dO o O)_i = sum_j P_ij dP_ij (the papers' D_i)
//
// Who owns what. Block (bx, h, b) owns a tile of Bc keys, j = bx * Bc + x: thread x keeps dK_j and
// dV_j in registers for the whole kernel and writes them once at the end -- dK and dV need no
// reduction across blocks. K_j and V_j sit in shared memory (t.k, t.v). The block walks the
// query rows in tiles of Br: it stages q_i, dO_i, lse_i and delta_i in shared memory, each thread
// recomputes P_ij for its key and every row of the tile from the forward's log-sum-exp -- the
// trick that saves the (B, H, N, N) P of version 1 -- and adds its share to dV_j and dK_j.
//
// dQ is the awkward one: row i's gradient sums over every key, and the keys are spread over all
// the blocks of (b, h). Two ways out: a separate dQ pass (a second kernel, one block per query
// tile, recomputing P and dS all over again), or accumulating into dQ in global memory with
// atomicAdd. This kernel does FlashAttention-2's: the block writes its dS tile to shared memory,
// then thread x turns into the owner of query row x of the tile (Br == Bc), sums
// dS_ij k_j over the block's keys and atomicAdds that partial dQ_i into global memory: d_head
// atomics per row per key tile instead of a second pass over Q K^T, at the price of a summation
// order that varies from run to run on a GPU (on the emulator blocks run one after another, so
// its results are repeatable). dQ must be zero before the launch.
//
// delta = rowsum(dO o O) comes from a small pre-kernel (attention_backward_delta): one dot product per
// row, instead of the row of dP o P version 1 sums.
//
// Causal: key tile [k0, k0 + Bc) is seen only by rows i >= k0, so the walk starts at the query
// tile holding row k0. Padding: a block whose keys are all past key_len[b] has nothing to add:
// it writes zeros to its dK and dV and stops.
#pragma once

#include "kernels/offsets.cuh"
#include "kernels/portable.cuh"

namespace headwise::kernels {

template <int D>
struct FlashBackwardShape {
    static constexpr int keys = D <= 64 ? 32 : 16;  // Bc: keys per block = threads per block
    static constexpr int rows = keys;               // Br: query rows per tile; thread x owns row x for dQ
    // K and V rows padded by one float: the lanes of a warp read k_j[c] for 32 different keys j at
    // once, which would all fall in one bank with rows of D floats; dS rows too (read by row owners).
    static constexpr int pad = 1;
    static constexpr std::size_t shared_bytes =
        sizeof(float) * (2 * std::size_t(keys) * (D + pad) + 2 * std::size_t(rows) * D +
                         std::size_t(rows) * (keys + pad) + 2 * std::size_t(rows));
    static_assert(rows == keys, "thread x owns key x of the block and query row x of the tile");
    static_assert(keys <= 32, "a block is at most one warp: its threads are the tile's keys");
    static_assert(shared_bytes <= 48 * 1024, "a block's static shared memory limit");
};

struct BackwardDeltaShape {
    static constexpr int threads = 64;  // rows per block
};

// delta_i = sum_c dO_ic O_ic. grid (ceil(N / 64), H, B), block (64): thread x is row bx * 64 + x.
//   out, d_out  (B, H, N, d_head)
//   delta       (B, H, N)
__global__ void attention_backward_delta(global_ptr<const float> out, global_ptr<const float> d_out,
                                         global_ptr<float> delta, AttentionArgs a) {
    const RowThread t = row_thread(a);
    if (t.row >= a.seq) return;
    const std::size_t row = t.head + t.row;
    const int D = a.d_head;
    float sum = 0.0f;
    for (int c = 0; c < D; ++c) sum += d_out[at(row, D, c)] * out[at(row, D, c)];
    delta[row] = sum;
}

// The block's shared memory, one struct so the stages can share it by reference. Plain arrays, as
// in version 3: the emulator checks no races or banks on them (shared_tile would, at ~20x the cost
// of the N = 1000 tests); the tests run the kernel under every schedule and compare bits instead.
template <int D>
struct FlashBackwardTiles {
    static constexpr int Bc = FlashBackwardShape<D>::keys, Br = FlashBackwardShape<D>::rows;
    static constexpr int pad = FlashBackwardShape<D>::pad;
    float k[Bc][D + pad];     // (Bc, D): the block's keys, zero past the last real one
    float v[Bc][D + pad];     // (Bc, D): their values
    float q[Br][D];           // (Br, D): the current query tile
    float d_out[Br][D];       // (Br, D): its rows of dO
    float d_s[Br][Bc + pad];  // (Br, Bc): dS of the tile against the block's keys
    float stats[2][Br];       // row 0: lse_i, row 1: delta_i
};

// K and V rows [k0, k0 + Bc) into shared memory, all threads together (consecutive threads take
// consecutive elements: coalesced); rows at or past `limit` (padding, or past N) become zeros.
template <int D>
__device__ __forceinline__ void load_key_tile(FlashBackwardTiles<D>& t, global_ptr<const float> k_bh,
                                              global_ptr<const float> v_bh, int k0, int limit) {
    constexpr int Bc = FlashBackwardShape<D>::keys;
    for (int e = static_cast<int>(threadIdx.x); e < Bc * D; e += Bc) {
        const int r = e / D, c = e % D;
        const bool real = k0 + r < limit;
        t.k[r][c] = real ? float(k_bh[at(k0 + r, D, c)]) : 0.0f;
        t.v[r][c] = real ? float(v_bh[at(k0 + r, D, c)]) : 0.0f;
    }
}

// Query rows [q0, q0 + Br): q, dO, lse and D into shared memory; rows past N are never read.
template <int D>
__device__ __forceinline__ void load_query_tile(FlashBackwardTiles<D>& t, global_ptr<const float> q_bh,
                                                global_ptr<const float> do_bh, global_ptr<const float> lse_bh,
                                                global_ptr<const float> delta_bh, int q0, int N) {
    constexpr int Br = FlashBackwardShape<D>::rows, threads = FlashBackwardShape<D>::keys;
    for (int e = static_cast<int>(threadIdx.x); e < Br * D; e += threads) {
        const int r = e / D, c = e % D;
        if (q0 + r < N) {
            t.q[r][c] = q_bh[at(q0 + r, D, c)];
            t.d_out[r][c] = do_bh[at(q0 + r, D, c)];
        }
    }
    const int r = static_cast<int>(threadIdx.x);  // Br == threads: one row's statistics each
    if (q0 + r < N) {
        t.stats[0][r] = lse_bh[q0 + r];
        t.stats[1][r] = delta_bh[q0 + r];
    }
}

// Thread x (key j = k0 + x) against every row i of the query tile:
//   P_ij = exp(q_i . k_j * scale - lse_i);  dV_j += P_ij dO_i
//   dS_ij = P_ij (dO_i . v_j - delta_i);         dK_j += dS_ij q_i   (times scale at the very end)
// and dS_ij into t.d_s (0 where key j is hidden from row i), for the dQ stage.
template <int D>
__device__ __forceinline__ void attend_query_tile(FlashBackwardTiles<D>& t, float (&dk_j)[D], float (&dv_j)[D], int q0,
                                                  int k0, int n_keys, const AttentionArgs& a) {
    constexpr int Br = FlashBackwardShape<D>::rows;
    const int x = static_cast<int>(threadIdx.x), j = k0 + x;
    for (int r = 0; r < Br; ++r) {
        const int i = q0 + r;
        float d_s = 0.0f;
        if (i < a.seq && j < key_end(i, n_keys, a.causal)) {
            float s = 0.0f, dp = 0.0f;
            for (int c = 0; c < D; ++c) s += t.q[r][c] * t.k[x][c];
            const float p = expf(s * a.scale - t.stats[0][r]);
            for (int c = 0; c < D; ++c) {
                const float d_o = t.d_out[r][c];
                dv_j[c] += p * d_o;
                dp += d_o * t.v[x][c];
            }
            d_s = p * (dp - t.stats[1][r]);
            for (int c = 0; c < D; ++c) dk_j[c] += d_s * t.q[r][c];
        }
        t.d_s[r][x] = d_s;
    }
}

// Thread x as the owner of query row i = q0 + x: dQ_i += sum_j dS_ij k_j * scale over the block's
// keys, by atomicAdd (other key blocks add to the same row). Rows that see none of these keys skip.
template <int D>
__device__ __forceinline__ void accumulate_dq(FlashBackwardTiles<D>& t, global_ptr<float> dq_bh, int q0, int k0,
                                              int n_keys, const AttentionArgs& a) {
    constexpr int Bc = FlashBackwardShape<D>::keys;
    const int x = static_cast<int>(threadIdx.x), i = q0 + x;
    if (i >= a.seq || key_end(i, n_keys, a.causal) <= k0) return;
    // Not unrolled: D x Bc unrolled products crowd dK_j and dV_j out of the registers (ptxas for
    // sm_80: 255 registers and a 160-byte stack at d_head 64 unrolled, none without).
    HEADWISE_NO_UNROLL
    for (int c = 0; c < D; ++c) {
        float acc = 0.0f;
        for (int jj = 0; jj < Bc; ++jj) acc += t.d_s[x][jj] * t.k[jj][c];
        atomicAdd(dq_bh + at(i, D, c), acc * a.scale);
    }
}

// grid (ceil(N / Bc), H, B), block (Bc): thread x of block (bx, h, b) owns key bx * Bc + x.
//   q, k, v, d_out, dq, dk, dv  (B, H, N, D); dq zero on entry, accumulated
//   lse, delta                  (B, H, N): the forward's log-sum-exp, attention_backward_delta's D
template <int D>
__global__ void HEADWISE_LAUNCH_BOUNDS(FlashBackwardShape<D>::keys, 1)
    attention_backward_flash(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                             global_ptr<const int> key_len, global_ptr<const float> d_out, global_ptr<const float> lse,
                             global_ptr<const float> delta, global_ptr<float> dq, global_ptr<float> dk,
                             global_ptr<float> dv, AttentionArgs a) {
    constexpr int Bc = FlashBackwardShape<D>::keys, Br = FlashBackwardShape<D>::rows;
    __shared__ FlashBackwardTiles<D> t;
    static_assert(sizeof(t) == FlashBackwardShape<D>::shared_bytes);

    const int N = a.seq;
    const int k0 = static_cast<int>(blockIdx.x) * Bc;  // this block's first key
    const int j = k0 + static_cast<int>(threadIdx.x);  // this thread's key
    const int h = static_cast<int>(blockIdx.y);
    const int b = static_cast<int>(blockIdx.z);
    const int n_keys = key_len[b];
    const std::size_t head = head_row(b, h, a);
    const global_ptr<const float> q_bh = slice(q, at(head, D), at(N, D));       // (N, D)
    const global_ptr<const float> do_bh = slice(d_out, at(head, D), at(N, D));  // (N, D)
    const global_ptr<const float> lse_bh = slice(lse, head, N);                 // (N)
    const global_ptr<const float> delta_bh = slice(delta, head, N);             // (N)

    float dk_j[D], dv_j[D];  // (D) each: dK_j / scale and dV_j, in registers until the end
    for (int c = 0; c < D; ++c) dk_j[c] = 0.0f, dv_j[c] = 0.0f;

    if (k0 < n_keys) {  // uniform across the block: every thread reaches every barrier, or none does
        load_key_tile<D>(t, slice(k, at(head, D), at(N, D)), slice(v, at(head, D), at(N, D)), k0, n_keys);
        const int first = a.causal ? k0 / Br * Br : 0;  // causal: rows above k0 see none of these keys
        for (int q0 = first; q0 < N; q0 += Br) {
            load_query_tile<D>(t, q_bh, do_bh, lse_bh, delta_bh, q0, N);
            __syncthreads();  // tiles complete before anyone reads them
            attend_query_tile<D>(t, dk_j, dv_j, q0, k0, n_keys, a);
            __syncthreads();  // dS complete before the row owners read it
            accumulate_dq<D>(t, slice(dq, at(head, D), at(N, D)), q0, k0, n_keys, a);
            __syncthreads();  // nobody overwrites q, dO or dS while others still read them
        }
    }
    if (j < N) {
        const global_ptr<float> dk_row = slice(dk, at(head + j, D), D);  // (D)
        const global_ptr<float> dv_row = slice(dv, at(head + j, D), D);  // (D)
        for (int c = 0; c < D; ++c) dk_row[c] = dk_j[c] * a.scale, dv_row[c] = dv_j[c];
    }
}

}  // namespace headwise::kernels
