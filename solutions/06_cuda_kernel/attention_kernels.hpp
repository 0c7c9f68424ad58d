// Exercise 06 -- attention as CUDA kernels, graded on the CPU emulator (lesson 06).
//
// You write two kernel bodies in attention_kernels.cpp: the online-softmax kernel (part 1) and,
// as the stretch, the tiled one with K and V staged through __shared__ memory (part 2). This
// header is shared with the grader: do not change it.
//
// The kernels are plain CUDA C++. g++ compiles them against src/emulator/, which runs every CUDA
// thread on the CPU: threadIdx, blockIdx, blockDim, __shared__, __syncthreads() work as on a GPU,
// and global_ptr<T> (a plain T* under nvcc) checks every index you use.
//
// Layout: q, k, v, out are (B, H, N, d_head), contiguous fp32, in PyTorch's order.
// Launch (done for you by run_on_emulator below): grid (ceil(N / 64), H, B), block (64), so
// thread x of block (bx, h, b) owns query row i = bx * 64 + x of head h of sequence b.
#pragma once

#include "exercise.hpp"

#include "emulator/emulator.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/portable.cuh"

#include <cmath>
#include <limits>

namespace headwise::ex06 {

using emulator::Schedule;
using kernels::AttentionArgs;  // {batch, heads, seq, d_head, scale, causal}: see src/kernels/portable.cuh
using kernels::global_ptr;
using kernels::imin;
using kernels::slice;  // slice(p, offset, count): the `count` elements from `offset`, bounds-checked

inline constexpr int rows_per_block = 64;  // query rows per block = threads per block (Br)

// Key rows per K/V tile in shared memory (Bc): two (Bc, D) float tiles stay within 32 KiB, well
// under the 48 KiB a GPU allows a block's static __shared__ arrays.
template <int D>
inline constexpr int keys_per_tile = D <= 64 ? 64 : 32;

// The two kernels you write (attention_kernels.cpp). D = d_head, known at compile time so that a
// query row and an accumulator fit in per-thread arrays: float acc[D].
template <int D>
__global__ void attention_online(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<float> out, AttentionArgs a);
template <int D>
__global__ void attention_tiled(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                global_ptr<float> out, AttentionArgs a);

// What the grader calls: out (B, H, N, d_head) = softmax(q k^T / sqrt(d_head) [+ causal mask]) v,
// computed by your kernel on the emulator, its threads run in the given order.
Tensor4 online_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule);
Tensor4 tiled_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule);

// Launches kernel<d_head> (picked by `pick`) over q, k, v (B, H, N, d_head) on the emulator.
// Every output element starts as NaN, so one the kernel forgets to write cannot pass.
template <class Pick>
Tensor4 run_on_emulator(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule,
                        Pick pick) {
    const auto& s = q.shape();
    if (k.shape() != s || v.shape() != s) throw usage_error("q, k and v must have the same shape (B, H, N, d_head)");
    const AttentionArgs a{int(s[0]), int(s[1]), int(s[2]), int(s[3]), 1.0f / std::sqrt(float(s[3])), causal};
    Tensor4 out = Tensor4::from_shape(s);  // (B, H, N, d_head)
    out.fill(std::numeric_limits<float>::quiet_NaN());
    const std::size_t n = out.size();
    const dim3 grid(unsigned((a.seq + rows_per_block - 1) / rows_per_block), unsigned(a.heads), unsigned(a.batch));
    kernels::with_d_head(a.d_head, [&](auto d) {
        emulator::launch(schedule, grid, dim3(rows_per_block), pick(d), global_ptr<const float>(q.data(), n),
                         global_ptr<const float>(k.data(), n), global_ptr<const float>(v.data(), n),
                         global_ptr<float>(out.data(), n), a);
    });
    return out;
}

}  // namespace headwise::ex06
