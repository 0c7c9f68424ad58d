// Exercise 06 -- attention as CUDA kernels: online softmax (part 1) and tiled (part 2, stretch).
//
// Read lesson 06 first (./headwise run 6, lessons/06_cuda_kernel.cpp, src/kernels/*.cuh).
// Grade with:  ./headwise grade 6    (or: ctest --preset grade -L ex06)
//
// Each kernel runs once per CUDA thread; thread x of block (bx, h, b) owns query row
// i = bx * 64 + x of head h of sequence b (rows i >= N exist in the last block: mind them).
// Index global memory through slices: slice(k, offset, count) is the `count` floats from
// `offset`, and the emulator stops you (naming block and thread) the moment you index outside.
// The grader compares with the CPU reference in double precision, on N = 1, 17, 64, 100, 130,
// d_head = 8 and 64, causal and not, and runs your tiled kernel's threads in two different orders:
// a correct kernel gives the same answer either way.
#include "attention_kernels.hpp"

namespace headwise::ex06 {

// Part 1. One thread per query row, one pass over the keys: a running maximum m, a running
// normaliser l = sum_j exp(s_j - m) and a running output acc = sum_j exp(s_j - m) v_j.
template <int D>
__global__ void attention_online(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<float> out, AttentionArgs a) {
    // TODO(ex06): part 1. Find your query row i (return if i >= a.seq) and the (N, D) block of k
    // and v for head blockIdx.y of sequence blockIdx.z. Keep q_i[D] (times a.scale) and acc[D] in
    // per-thread arrays; for each visible key j (j <= i when a.causal) compute s = q_i . k_j and
    // update m, l and acc -- rescaling l AND acc by exp(m_old - m_new) whenever the maximum grows.
    // Finally out_i = acc / l. (lesson 06, step 4; src/kernels/online.cuh shows one way.)
    not_implemented_yet();
}

// Part 2 (stretch). The same mathematics, but the 64 threads of a block share each tile of
// keys_per_tile<D> K and V rows: they copy it into __shared__ memory together, wait for each
// other, compute, and wait again before the next tile overwrites it.
template <int D>
__global__ void attention_tiled(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                global_ptr<float> out, AttentionArgs a) {
    // TODO(ex06): part 2 (stretch). Declare two __shared__ float tiles [keys_per_tile<D>][D] for K
    // and V. Keep q_i, acc, m, l per thread as in part 1, but loop over the keys a tile at a time:
    // all 64 threads copy the tile's rows (those below N, or below the block's last row + 1 when
    // causal) -- including threads whose own row i >= N, which must not return early -- then
    // __syncthreads(), then each thread updates m, l, acc with its visible keys of the tile, then
    // __syncthreads() again. Do not forget the last, partial tile. (lesson 06, step 5)
    not_implemented_yet();
}

// ---------------------------------------------------------------------------------------------
// Nothing to change below: how the grader runs your kernels on the emulator.

Tensor4 online_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule) {
    return run_on_emulator(q, k, v, causal, schedule, [](auto d) { return &attention_online<decltype(d)::value>; });
}

Tensor4 tiled_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule) {
    return run_on_emulator(q, k, v, causal, schedule, [](auto d) { return &attention_tiled<decltype(d)::value>; });
}

}  // namespace headwise::ex06
