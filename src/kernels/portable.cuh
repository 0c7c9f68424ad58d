// kernels/portable.cuh -- the little that lets one kernel source compile with nvcc and with g++.
//
// Under nvcc the kernels are ordinary CUDA: global_ptr<T> is T*, slice() is pointer arithmetic.
// Under g++ they compile against the CPU emulator (src/emulator/emulator.hpp), where global_ptr<T>
// counts every load and store and slice() makes indexing past the slice an error.
#pragma once

#include <cstddef>

#ifdef __CUDACC__

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

namespace headwise::kernels {
template <class T>
using global_ptr = T*;

template <class T>
__device__ __forceinline__ T* slice(T* p, std::size_t offset, std::size_t /*count*/) {
    return p + offset;
}

// A (Rows, Cols) __shared__ tile: t(r, c) is an element, t.ptr(r, c) its address. On the emulator
// the same name checks bounds and counts bank conflicts (emulator/emulator.hpp).
template <class T, int Rows, int Cols>
struct shared_tile {
    alignas(128) T data[Rows][Cols];
    __device__ __forceinline__ T& operator()(int r, int c) { return data[r][c]; }
    __device__ __forceinline__ T* ptr(int r, int c) { return &data[r][c]; }
};
}  // namespace headwise::kernels

#define HEADWISE_UNROLL _Pragma("unroll")
// A loop nvcc must not unroll: one whose unrolled copies would each hold their loads in registers.
#define HEADWISE_NO_UNROLL _Pragma("unroll 1")
// At most `threads` per block, and few enough registers for `blocks` blocks on one SM.
#define HEADWISE_LAUNCH_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)

#else

#include "emulator/emulator.hpp"

namespace headwise::kernels {
using emulator::global_ptr;
using emulator::shared_tile;
using emulator::slice;
}  // namespace headwise::kernels

#define HEADWISE_UNROLL
#define HEADWISE_NO_UNROLL
#define HEADWISE_LAUNCH_BOUNDS(threads, blocks)

#endif

namespace headwise::kernels {

// What every attention kernel needs to know about the problem, passed by value.
// Layout of q, k, v, out: (B, H, N, d_head), contiguous, fp32. key_len: (B) int, the number of
// real (unpadded) keys of each sequence; keys j >= key_len[b] are masked for every query.
struct AttentionArgs {
    int batch;    // B
    int heads;    // H
    int seq;      // N
    int d_head;   // d_head
    float scale;  // multiplies q . k, normally 1 / sqrt(d_head)
    bool causal;  // query i sees keys 0..i only
};

__device__ __forceinline__ int imin(int x, int y) { return x < y ? x : y; }

// log2(e): the kernels that compute exp(x) as exp2(x log2(e)) scale their scores by it once.
inline constexpr float log2_e = 1.4426950408889634f;

// Query i of sequence b may look at keys [0, key_end): the causal bound and the padding bound,
// whichever is tighter. key_end == 0 means every key is masked: that row's output is all zeros.
__device__ __forceinline__ int key_end(int i, int n_keys, bool causal) { return causal ? imin(i + 1, n_keys) : n_keys; }

}  // namespace headwise::kernels
