// kernels/tensor_core.cuh -- version 5: FlashAttention-2 tiling on tensor cores (nvcuda::wmma).
//
// Versions 1-4 do every multiply-add on the ordinary fp32 units. A tensor core multiplies whole
// 16x16 tiles: one wmma::mma_sync call by a warp computes D = A B + C for (16, 16) matrices --
// 4096 multiply-adds -- with A and B in 16 bits (fp16 or bf16) and C, D in fp32. Attention has
// two such products per tile, and the softmax between them stays in fp32:
//
//   S = Q K^T     (16 rows, Bc keys) per warp:  D/16 mma_sync per 16 keys, from Q and K in 16 bits
//   online softmax on S, in fp32 (the running max m, normaliser l and rescale of version 3)
//   O += P V      P rounded to 16 bits, O accumulated in fp32 fragments
//
// Inputs q, k, v are fp16 (or bf16) in global memory; the output is fp32. Each warp owns 16 query
// rows; a block's warps share the K/V tiles in shared memory, as in version 3, and fill them 16
// bytes (8 elements) per load (kernels/copy16.cuh). Causal tiles that no row of the block can see
// are never loaded. A fragment's element layout is the hardware's secret, so anything done per
// row (masking, the softmax, rescaling O by exp(m_old - m_new)) happens in shared memory:
//   - S is stored as a (16, Bc) float tile. Two lanes share a row (lanes r and r + 16 own row r,
//     its even and its odd keys): each keeps the row's running max and its own part of the
//     normaliser, and a row's maximum is one shuffle away (the other lane of the pair).
//     Bank conflicts: rows of the score tile are 48 floats apart, so that the 16 columns of an O
//     scratch row and those of the next row fall in different banks (the rescaling below reads two
//     rows at once). Then rows r and r + 2 start in the same bank: row r takes its keys in an
//     order rotated by 2 (r / 2) keys, which puts the 32 words a warp reads at once (and the 16
//     words of P it writes) in as many banks.
//   - P is written back as 16-bit values and read as a wmma A fragment.
//   - O's fragments make a round trip through a (16, 16) float scratch to be rescaled row by row,
//     but only in tiles where some row's maximum grew (__any_sync: once the first few hundred keys
//     are seen, most tiles change no row's maximum, and O stays in its fragments).
// exp(x - m) is computed as exp2(x log2(e) - m log2(e)): scores are scaled by scale * log2(e)
// once, and m is kept in those units.
//
// Precision, derived (the tests check both bounds, docs/06_cuda_kernel.md says the same):
//   u = 2^-11 for fp16 (2^-8 for bf16): the relative error of one rounding to nearest.
//   Against a reference computed in double from the *same rounded* q, k, v, the only new error is
//   P's rounding: |sum_j p_j (1 + d_j) v_j - sum_j p_j v_j| / l <= u max_j |v_j|, plus fp32
//   summation (1e-5 + 1e-4 |ref|, the other versions' tolerance).
//   Against the fp32 reference, rounding q and k moves each score s_j = scale q.k_j by at most
//   e = 2 u scale sum_c |q_c| |k_jc|; the softmax weights then move by at most a factor
//   exp(+-2e), so the output moves by at most (exp(2e) - 1) max|v| <~ 2e max|v|, and rounding v
//   adds u max|v|. Per row: |out - ref| <= max_j|v_j| (3u + exp(2 e_max) - 1) + fp32's tolerance.
//   For N(0, 1) inputs at d_head = 64 that is about 0.05; the errors measured are ~1e-3.
#pragma once

#include "kernels/copy16.cuh"
#include "kernels/head_block.cuh"
#include "kernels/offsets.cuh"
#include "kernels/portable.cuh"

namespace headwise::kernels {

template <int D>
struct TensorCoreShape {
    static_assert(D % 16 == 0, "wmma tiles are 16 wide: d_head must be a multiple of 16");
    static constexpr int warps = D <= 64 ? 4 : 2;  // per block (2 at d_head 128 to stay within 48 KiB)
    static constexpr int threads = 32 * warps;
    static constexpr int min_blocks = D <= 64 ? 4 : 1;  // 4 x 4 warps per SM: at most 128 registers
    static constexpr int rows = 16 * warps;             // Br: query rows per block, 16 per warp
    static constexpr int cols = 32;                     // Bc: keys per tile, 16 per lane of a row's pair
    static constexpr int chunks = D / 8;                // 16-byte chunks (8 elements) per row of Q, K, V
    static constexpr int ld_in = D + 8;                 // row stride of the 16-bit Q, K, V tiles (+16 bytes)
    static constexpr int ld_s = cols + 16;              // row stride of the float score tile
    static constexpr int ld_p = cols + 16;              // row stride of the 16-bit P tile
    static constexpr std::size_t shared_bytes = 2 * std::size_t(rows + 2 * cols) * ld_in +
                                                4 * std::size_t(rows) * ld_s + 2 * std::size_t(rows) * ld_p +
                                                4 * std::size_t(warps) * 16;
    static_assert(cols == 32, "the two lanes of a row take 16 keys of the tile each");
    static_assert(shared_bytes <= 48 * 1024, "the tiles fit 48 KiB of static shared memory");
};

// Where a lane works: its warp's 16 rows of the block, its row among them and which half of the
// row's keys it takes.
struct TensorCoreLane {
    int warp, lane;
    int r0;        // the warp's first row in the block
    int row;       // the lane's row of the warp's 16 (lanes r and r + 16 share row r)
    int half;      // its keys of a tile are 2 j + half ...
    int rotation;  // ... taken from 2 j + rotation (mod Bc): see bank conflicts
    int end;       // the keys [0, end) its query may see (0 for a row past N)
};

// What a warp carries from tile to tile: Q and O (16, D) in 16-wide fragments, and per lane the
// row's running max (log2 units, the same in both lanes of the row) and its part of the normaliser.
template <int D, class T>
struct TensorCoreRows {
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, T, nvcuda::wmma::row_major> q_frag[D / 16];
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> o_frag[D / 16];  // unnormalised
    float m = -INFINITY;
    float l = 0.0f;
};

// S = Q K^T, (16, Bc) for the warp's rows, into s_tile: K^T read from k_tile as a column-major
// (D, Bc) matrix.
template <int D, class T, class KTile, class STile>
__device__ __forceinline__ void scores_to_shared(TensorCoreRows<D, T>& rows, KTile& k_tile, STile& s_tile, int r0) {
    namespace wmma = nvcuda::wmma;
    using Shape = TensorCoreShape<D>;
    HEADWISE_UNROLL
    for (int n = 0; n < Shape::cols / 16; ++n) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> s_frag;
        wmma::fill_fragment(s_frag, 0.0f);
        HEADWISE_UNROLL
        for (int kk = 0; kk < D / 16; ++kk) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> k_frag;
            wmma::load_matrix_sync(k_frag, k_tile.ptr(16 * n, 16 * kk), Shape::ld_in);
            wmma::mma_sync(s_frag, rows.q_frag[kk], k_frag, s_frag);
        }
        wmma::store_matrix_sync(s_tile.ptr(r0, 16 * n), s_frag, Shape::ld_s, wmma::mem_row_major);
    }
}

// The online softmax in fp32 on the lane's 16 keys of its row (of the tile's 32, from k0): P in 16
// bits into p_tile, the row's rescale factor into row_tile. Returns whether O must be rescaled: a
// row's maximum grew after it had seen a key (before that, O's row is zeros), for some row of the
// warp.
template <int D, class T, class STile, class PTile, class RowTile>
__device__ __forceinline__ bool softmax_to_p(TensorCoreRows<D, T>& rows, const TensorCoreLane& my, STile& s_tile,
                                             PTile& p_tile, RowTile& row_tile, int k0, float scale2) {
    constexpr int Bc = TensorCoreShape<D>::cols;
    const auto key_of = [&](int j) { return (2 * j + my.rotation) % Bc + my.half; };  // s[j] is key_of(j)
    float s[Bc / 2];
    float mx = -INFINITY;
    HEADWISE_UNROLL
    for (int j = 0; j < Bc / 2; ++j) {
        const int key = key_of(j);
        const float x = s_tile(my.r0 + my.row, key) * scale2;  // read by every lane: one request per j
        s[j] = k0 + key < my.end ? x : -INFINITY;
        mx = fmaxf(mx, s[j]);
    }
    const float m_new = fmaxf(rows.m, fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16)));  // the row's, both lanes
    const float m_safe = m_new == -INFINITY ? 0.0f : m_new;  // a row that has seen no key yet
    const float rescale = exp2f(rows.m - m_safe);            // 0 while the row had seen nothing
    float sum = 0.0f;
    HEADWISE_UNROLL
    for (int j = 0; j < Bc / 2; ++j) {
        const float p = exp2f(s[j] - m_safe);  // 0 for a masked key
        p_tile(my.r0 + my.row, key_of(j)) = T(p);
        sum += p;
    }
    const bool rescale_o = __any_sync(0xffffffffu, rows.m != -INFINITY && m_new > rows.m);
    rows.l = rows.l * rescale + sum;
    rows.m = m_new;
    if (my.half == 0) row_tile(my.warp, my.row) = rescale;
    return rescale_o;
}

// O *= rescale (row by row, through the scratch in s_tile) where needed, then O += P V.
template <int D, class T, class PTile, class VTile, class STile, class RowTile>
__device__ __forceinline__ void accumulate_pv(TensorCoreRows<D, T>& rows, const TensorCoreLane& my, bool rescale_o,
                                              PTile& p_tile, VTile& v_tile, STile& s_tile, RowTile& row_tile) {
    namespace wmma = nvcuda::wmma;
    using Shape = TensorCoreShape<D>;
    constexpr int Bc = Shape::cols;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> p_frag[Bc / 16];
    HEADWISE_UNROLL
    for (int kk = 0; kk < Bc / 16; ++kk) wmma::load_matrix_sync(p_frag[kk], p_tile.ptr(my.r0, 16 * kk), Shape::ld_p);
    HEADWISE_UNROLL
    for (int n = 0; n < D / 16; ++n) {
        if (rescale_o) {  // the same in every lane of the warp
            wmma::store_matrix_sync(s_tile.ptr(my.r0, 0), rows.o_frag[n], Shape::ld_s, wmma::mem_row_major);
            __syncwarp();
            for (int e = my.lane; e < 256; e += 32) s_tile(my.r0 + e / 16, e % 16) *= row_tile(my.warp, e / 16);
            __syncwarp();
            wmma::load_matrix_sync(rows.o_frag[n], s_tile.ptr(my.r0, 0), Shape::ld_s, wmma::mem_row_major);
        }
        HEADWISE_UNROLL
        for (int kk = 0; kk < Bc / 16; ++kk) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> v_frag;
            wmma::load_matrix_sync(v_frag, v_tile.ptr(16 * kk, 16 * n), Shape::ld_in);
            wmma::mma_sync(rows.o_frag[n], p_frag[kk], v_frag, rows.o_frag[n]);
        }
    }
}

// out = O / l, l the sum of the row's two parts; a row with no visible key gives zeros.
template <int D, class T, class STile, class RowTile>
__device__ __forceinline__ void write_rows(TensorCoreRows<D, T>& rows, const TensorCoreLane& my, STile& s_tile,
                                           RowTile& row_tile, global_ptr<float> out, std::size_t head, int q0, int N) {
    namespace wmma = nvcuda::wmma;
    float l = rows.l + __shfl_xor_sync(0xffffffffu, rows.l, 16);
    if (my.half == 0) row_tile(my.warp, my.row) = l > 0.0f ? 1.0f / l : 0.0f;
    __syncwarp();
    HEADWISE_UNROLL
    for (int n = 0; n < D / 16; ++n) {
        wmma::store_matrix_sync(s_tile.ptr(my.r0, 0), rows.o_frag[n], TensorCoreShape<D>::ld_s, wmma::mem_row_major);
        __syncwarp();
        for (int e = my.lane; e < 256; e += 32) {
            const int r = e / 16, c = e % 16, qi = q0 + my.r0 + r;
            if (qi < N) out[at(head + qi, D, 16 * n + c)] = s_tile(my.r0 + r, c) * row_tile(my.warp, r);
        }
        __syncwarp();
    }
}

// grid (ceil(N / Br), H, B), block (32 * warps): warp w of block (bx, h, b) owns query rows
// bx * Br + 16 w .. + 15; lanes r and r + 16 of the warp share its row r.
//   q, k, v  (B, H, N, D), T = __half or __nv_bfloat16
//   key_len  (B)
//   out      (B, H, N, D), fp32
template <int D, class T>
__global__ void HEADWISE_LAUNCH_BOUNDS(TensorCoreShape<D>::threads, TensorCoreShape<D>::min_blocks)
    attention_tensor_core(global_ptr<const T> q, global_ptr<const T> k, global_ptr<const T> v,
                          global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    namespace wmma = nvcuda::wmma;
    using Shape = TensorCoreShape<D>;
    constexpr int Br = Shape::rows, Bc = Shape::cols;
    constexpr int LI = Shape::ld_in;
    __shared__ shared_tile<T, Br, LI> q_tile;                  // (Br, D) + padding
    __shared__ shared_tile<T, Bc, LI> k_tile;                  // (Bc, D) + padding
    __shared__ shared_tile<T, Bc, LI> v_tile;                  // (Bc, D) + padding
    __shared__ shared_tile<float, Br, Shape::ld_s> s_tile;     // per warp (16, Bc): scores, then O scratch
    __shared__ shared_tile<T, Br, Shape::ld_p> p_tile;         // per warp (16, Bc): weights in 16 bits
    __shared__ shared_tile<float, Shape::warps, 16> row_tile;  // per warp (16): a factor per row

    const int t = static_cast<int>(threadIdx.x), N = a.seq;
    const HeadBlock<T> blk = head_block<D, Br>(q, k, v, key_len, a, static_cast<int>(blockIdx.x));
    const int warp = t / 32, lane = t % 32, row = lane % 16;
    const int i = blk.q0 + 16 * warp + row;  // the lane's query
    const TensorCoreLane my{
        warp, lane, 16 * warp, row, lane / 16, 2 * (row / 2), i < N ? key_end(i, blk.n_keys, a.causal) : 0};
    const float scale2 = a.scale * log2_e;  // exp(x) = exp2(x log2(e))

    load_rows<D, Br, Shape::threads>(q_tile, blk.q, blk.q0, N, t);
    __syncthreads();
    TensorCoreRows<D, T> rows;
    HEADWISE_UNROLL
    for (int n = 0; n < D / 16; ++n) {
        wmma::load_matrix_sync(rows.q_frag[n], q_tile.ptr(my.r0, 16 * n), LI);
        wmma::fill_fragment(rows.o_frag[n], 0.0f);
    }
    for (int k0 = 0; k0 < blk.block_end; k0 += Bc) {
        load_kv_rows<D, Bc, Shape::threads>(k_tile, v_tile, blk.k, blk.v, k0, blk.block_end, t);
        __syncthreads();
        scores_to_shared(rows, k_tile, s_tile, my.r0);
        __syncwarp();
        const bool rescale_o = softmax_to_p(rows, my, s_tile, p_tile, row_tile, k0, scale2);
        __syncwarp();
        accumulate_pv(rows, my, rescale_o, p_tile, v_tile, s_tile, row_tile);
        __syncthreads();  // the tiles are free for the next ones
    }
    write_rows(rows, my, s_tile, row_tile, out, blk.head, blk.q0, N);
}

}  // namespace headwise::kernels
