// Exercise 06 -- attention as CUDA kernels: online softmax (part 1), tiled (part 2, stretch), and
// the warp reductions of lesson 06's versions 4 and 5 (part 3, optional).
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
// a correct kernel gives the same answer either way. Parts are graded as milestones: the grade
// says "part 1 of 2 done" as soon as part 1's tests pass, whatever parts 2 and 3 do.
#include "attention_kernels.hpp"

namespace headwise::ex06 {

// Part 1. One thread per query row, one pass over the keys: a running maximum m, a running
// normaliser l = sum_j exp(s_j - m) and a running output acc = sum_j exp(s_j - m) v_j.
template <int D>
__global__ void attention_online(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    // TODO(ex06): part 1. Find your query row i (return if i >= a.seq) and the (N, D) block of k
    // and v for head blockIdx.y of sequence blockIdx.z. Keep q_i[D] (times a.scale) and acc[D] in
    // per-thread arrays; for each visible key j (j <= i when a.causal) compute s = q_i . k_j and
    // update m, l and acc -- rescaling l AND acc by exp(m_old - m_new) whenever the maximum grows.
    // Finally out_i = acc / l. (lesson 06, step 4; src/kernels/online.cuh shows one way.)
    not_implemented_yet();
}

// Part 2 (stretch). The same mathematics, but the 64 threads of a block share each tile of
// keys_per_tile<D> K and V rows: they copy it into __shared__ memory together, wait for each
// other, compute, and wait again before the next tile overwrites it. Declare the tiles as
// shared_tile (as lesson 06's versions 4 and 5 do): the emulator then checks every access, and a
// missing __syncthreads() is reported as a race naming the two lines of your kernel.
template <int D>
__global__ void attention_tiled(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    // TODO(ex06): part 2 (stretch). Declare two tiles for K and V,
    // `__shared__ shared_tile<float, keys_per_tile<D>, D> k_tile;` (element (r, c): k_tile(r, c)). Keep q_i, acc, m, l per thread as in part 1, but loop over the keys a tile at a time:
    // all 64 threads copy the tile's rows (those below N, or below the block's last row + 1 when
    // causal) -- including threads whose own row i >= N, which must not return early -- then
    // __syncthreads(), then each thread updates m, l, acc with its visible keys of the tile, then
    // __syncthreads() again. Do not forget the last, partial tile. (lesson 06, step 5)
    not_implemented_yet();
}

// Part 3 (optional). The sum over the warp in five steps: in the step with offset o (16, 8, 4,
// 2, 1) every lane adds the value of lane (its own ^ o), read with
// __shfl_xor_sync(0xffffffff, x, o). After the last step every lane holds the whole sum.
__device__ float warp_sum(float x) {
    // TODO(ex06): part 3 (optional). Five butterfly steps, offsets 16, 8, 4, 2, 1, all 32 lanes
    // taking part in each (mask 0xffffffff). (lesson 06, step 6; src/kernels/warp_reduce.cuh)
    (void)x;
    not_implemented_yet();
}

// The same with fmaxf instead of +.
__device__ float warp_max(float x) {
    // TODO(ex06): part 3 (optional). As warp_sum, combining with fmaxf.
    (void)x;
    not_implemented_yet();
}

// ---------------------------------------------------------------------------------------------
// Nothing to change below: how the grader runs your kernels on the emulator, launched exactly as
// lesson 06 launches its own (kernels::launch_on_emulator).

Tensor4 online_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule) {
    return kernels::with_d_head(int(q.shape()[3]), [&](auto d) {
        return launch_like_the_lesson(kernels::Version::online, &attention_online<decltype(d)::value>, q, k, v, causal,
                                      schedule);
    });
}

Tensor4 tiled_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule) {
    return kernels::with_d_head(int(q.shape()[3]), [&](auto d) {
        return launch_like_the_lesson(kernels::Version::tiled, &attention_tiled<decltype(d)::value>, q, k, v, causal,
                                      schedule);
    });
}

}  // namespace headwise::ex06
