// kernels/head_block.cuh -- the prologue every tiled kernel opens with: which head and which query
// rows its block owns, that head's slices of q, k and v, and the keys any of its rows may see.
#pragma once

#include "kernels/offsets.cuh"
#include "kernels/portable.cuh"

namespace headwise::kernels {

// Block (bx, h, b) = (blockIdx.x, blockIdx.y, blockIdx.z) of a grid (ceil(N / Br), H, B).
template <class T>
struct HeadBlock {
    int b;                        // the sequence
    std::size_t head;             // row 0 of head (b, h) among all B * H * N rows
    global_ptr<const T> q, k, v;  // (N, D) each: head (b, h)'s rows
    int q0;                       // the block's first query row
    int n_keys;                   // key_len[b]: the sequence's real keys
    int block_end;                // keys [0, block_end) some row of the block may see
};

// `query_block` is the block's place among the head's blocks of Br rows (blockIdx.x, or another
// order that starts the dearest blocks first).
template <int D, int Br, class T>
__device__ __forceinline__ HeadBlock<T> head_block(global_ptr<const T> q, global_ptr<const T> k, global_ptr<const T> v,
                                                   global_ptr<const int> key_len, const AttentionArgs& a,
                                                   int query_block) {
    const int N = a.seq, b = static_cast<int>(blockIdx.z), q0 = query_block * Br;
    const std::size_t head = head_row(b, static_cast<int>(blockIdx.y), a);
    const int n_keys = key_len[b];
    return {b,
            head,
            slice(q, at(head, D), at(N, D)),
            slice(k, at(head, D), at(N, D)),
            slice(v, at(head, D), at(N, D)),
            q0,
            n_keys,
            key_end(imin(q0 + Br, N) - 1, n_keys, a.causal)};
}

}  // namespace headwise::kernels
