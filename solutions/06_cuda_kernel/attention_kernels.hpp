// Exercise 06 -- attention as CUDA kernels, graded on the CPU emulator (lesson 06).
//
// You write kernel bodies in attention_kernels.cpp: the online-softmax kernel (part 1), the tiled
// one with K and V staged through __shared__ memory (part 2), and, if you like, the warp
// reductions version 4 is built on (part 3, optional). This header is shared with the grader:
// do not change it.
//
// The kernels are plain CUDA C++ with the signatures of lesson 06's own (src/kernels/online.cuh,
// tiled.cuh), and the grader launches them exactly as the lesson launches those: with
// kernels::launch_on_emulator (src/kernels/launch.hpp), which takes the grid and block from
// kernels::launch_config -- grid (ceil(N / 64), H, B), block (64): thread x of block (bx, h, b)
// owns query row i = bx * 64 + x of head h of sequence b. g++ compiles your kernels against
// src/emulator/, which runs every CUDA thread on the CPU: threadIdx, blockIdx, blockDim,
// __shared__, __syncthreads() and the warp shuffles work as on a GPU, and global_ptr<T> (a plain
// T* under nvcc) checks every index you use.
//
// Layout: q, k, v, out are (B, H, N, d_head), contiguous fp32, in PyTorch's order. key_len (B) is
// each sequence's number of real keys; the grader gives every sequence all N keys, so your
// kernels may ignore it (lesson 06's use it through kernels::key_end).
#pragma once

#include "exercise.hpp"

#include "emulator/emulator.hpp"
#include "kernels/attention_kernels.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/launch.hpp"
#include "kernels/portable.cuh"

#include <cmath>
#include <limits>
#include <vector>

namespace headwise::ex06 {

using emulator::Schedule;
using kernels::AttentionArgs;  // {batch, heads, seq, d_head, scale, causal}: see src/kernels/portable.cuh
using kernels::global_ptr;
using kernels::imin;
using kernels::shared_tile;  // __shared__ shared_tile<float, R, C> t; element t(r, c), checked for races
using kernels::slice;  // slice(p, offset, count): the `count` elements from `offset`, bounds-checked

inline constexpr int rows_per_block = 64;  // query rows per block = threads per block (Br)

// Key rows per K/V tile in shared memory (Bc): two (Bc, D) float tiles stay within 32 KiB, well
// under the 48 KiB a GPU allows a block's static __shared__ arrays.
template <int D>
inline constexpr int keys_per_tile = D <= 64 ? 64 : 32;

// The kernels you write (attention_kernels.cpp). D = d_head, known at compile time so that a
// query row and an accumulator fit in per-thread arrays: float acc[D].
template <int D>
__global__ void attention_online(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a);
template <int D>
__global__ void attention_tiled(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a);

// Part 3 (optional): x summed, or its maximum taken, over the 32 lanes of the calling warp, the
// result in every lane. Called by all 32 lanes together.
__device__ float warp_sum(float x);
__device__ float warp_max(float x);

// What the grader calls: out (B, H, N, d_head) = softmax(q k^T / sqrt(d_head) [+ causal mask]) v,
// computed by your kernel on the emulator, its threads run in the given order.
Tensor4 online_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule);
Tensor4 tiled_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule);

// Launches `kernel` (version v's launch configuration, as lesson 06 does) over q, k, v
// (B, H, N, d_head), every sequence with all N keys. Every output element starts as NaN, so one
// the kernel forgets to write cannot pass.
inline Tensor4 launch_like_the_lesson(kernels::Version v, kernels::AttentionKernel kernel, const Tensor4& q,
                                      const Tensor4& k, const Tensor4& val, bool causal, Schedule schedule) {
    const auto& s = q.shape();
    if (k.shape() != s || val.shape() != s) throw usage_error("q, k and v must have the same shape (B, H, N, d_head)");
    kernels::Problem p;
    p.batch = int(s[0]), p.heads = int(s[1]), p.seq = int(s[2]), p.d_head = int(s[3]), p.causal = causal;
    const std::vector<int> key_len(s[0], p.seq);  // (B): no padding
    Tensor4 out = Tensor4::from_shape(s);  // (B, H, N, d_head)
    out.fill(std::numeric_limits<float>::quiet_NaN());
    kernels::launch_on_emulator(v, p, {q.data(), k.data(), val.data(), key_len.data()}, out.data(), schedule, kernel);
    return out;
}

// One block of 64 threads (2 warps): thread t reduces x[t] with your warp_sum or warp_max.
__global__ inline void reduce_each_warp(global_ptr<const float> x, global_ptr<float> out, bool maximum) {
    const int t = int(threadIdx.x);
    out[t] = maximum ? warp_max(x[t]) : warp_sum(x[t]);
}

// What the grader calls for part 3: x (2 warps, 32 lanes), and what every lane holds afterwards.
inline Tensor2 warp_reduce(const Tensor2& x, bool maximum, Schedule schedule) {
    if (x.shape()[0] != 2 || x.shape()[1] != 32) throw usage_error("warp_reduce takes x of shape (2, 32)");
    Tensor2 out = Tensor2::from_shape({2, 32});  // (warp, lane)
    out.fill(std::numeric_limits<float>::quiet_NaN());
    emulator::launch(schedule, dim3(1), dim3(64), reduce_each_warp, global_ptr<const float>(x.data(), 64),
                     global_ptr<float>(out.data(), 64), maximum);
    return out;
}

}  // namespace headwise::ex06
