// kernels/attention_kernels.hpp -- the five attention kernels, seen from plain C++ host code.
//
//   naive        naive.cuh        one thread per query row, 3 passes, N x N scratch in global memory
//   online       online.cuh       one thread per query row, 1 pass, running max / normaliser / output
//   tiled        tiled.cuh        one block per 64 query rows, K/V tiles in shared memory (flash-style)
//   warp         warp.cuh         register tiling: a thread owns 4 rows x 4 keys of S and 4 rows of O
//   tensor_core  tensor_core.cuh  wmma 16x16x16 tiles, fp16 (or bf16) inputs, fp32 softmax and output
//   mma          flash.cuh        mma.sync m16n8k16 + ldmatrix: Q, S, P and O in registers (FlashAttention-2)
//   pipelined    flash.cuh        mma's math, K/V tiles double-buffered by cp.async into swizzled tiles,
//                                 in one of several tile shapes (Problem::tiles, kernels/flash_tiles.hpp)
//
// Every buffer is fp32 (or int for key_len), contiguous, in PyTorch's order (tensor_core rounds
// q, k, v to 16 bits before it starts: its inputs on a GPU are 16-bit buffers):
//   q, k, v, out  (B, H, N, d_head)
//   key_len       (B): keys j >= key_len[b] are padding, masked for every query of sequence b
// This header knows neither CUDA nor the emulator's macros: the lesson and the tests include it.
// emulate() runs a kernel on the CPU emulator (always available); kernels/device.hpp runs it on
// a GPU when there is one.
#pragma once

#include "emulator/runtime.hpp"
#include "kernels/flash_tiles.hpp"

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

namespace headwise::kernels {

enum class Version { naive, online, tiled, warp, tensor_core, mma, pipelined };
inline constexpr std::array<Version, 7> versions{Version::naive,    Version::online,      Version::tiled,
                                                 Version::warp,     Version::tensor_core, Version::mma,
                                                 Version::pipelined};
std::string_view name(Version v);
// The tensor-core versions compute from 16-bit inputs: they are checked with their own, derived tolerance.
inline constexpr bool sixteen_bit(Version v) {
    return v == Version::tensor_core || v == Version::mma || v == Version::pipelined;
}
// Versions 6 and 7 (mma.sync, ldmatrix, cp.async): sm_80 and later on a GPU, d_head 64 and 128.
inline constexpr bool needs_sm80(Version v) { return v == Version::mma || v == Version::pipelined; }

// online, tiled and warp keep query rows in registers, so they exist for these d_head only;
// tensor_core for the multiples of 16 among them, mma and pipelined for 64 and 128; naive takes any d_head.
inline constexpr std::array<int, 5> compiled_d_heads{8, 16, 32, 64, 128};
bool supports(Version v, int d_head);

struct Problem {
    int batch = 1;  // B
    int heads = 1;  // H
    int seq = 1;    // N
    int d_head = 64;
    bool causal = false;
    float scale = 0.0f;                      // 0 = the usual 1 / sqrt(d_head)
    bool bf16 = false;                       // 16-bit versions: bf16 instead of fp16 inputs (GPU: pipelined only)
    FlashTiles tiles = default_flash_tiles;  // pipelined only: its tile shape (kernels/flash_tiles.hpp)
    float effective_scale() const;
};

struct Inputs {
    const float* q;      // (B, H, N, d_head)
    const float* k;      // (B, H, N, d_head)
    const float* v;      // (B, H, N, d_head)
    const int* key_len;  // (B)
};

struct LaunchConfig {
    std::array<unsigned, 3> grid;   // blocks, x y z
    std::array<unsigned, 3> block;  // threads per block, x y z
    std::size_t shared_bytes;       // static __shared__ memory per block
    std::size_t scratch_floats;     // extra global memory the kernel needs (naive's (B, H, N, N))
    unsigned rows_per_block = 0;    // query rows one block owns
};
LaunchConfig launch_config(Version v, const Problem& p);

// Throws std::invalid_argument naming what is wrong: a size below 1, a d_head `v` has no build
// for, a key_len outside [0, N] (when key_len is given), naive's scratch above its limit. Offsets
// are 64-bit (kernels/offsets.cuh): any N an int holds is fine for versions 2 and up.
void validate(Version v, const Problem& p, const int* key_len = nullptr);
// naive's (B, H, N, N) scratch, in floats, at most 2^31 (8 GiB: B = 8, H = 16, N = 4096 fits).
inline constexpr std::size_t naive_scratch_limit = std::size_t(1) << 31;

// About how many global and shared accesses the emulator makes to run versions 1-5 and the
// reference once each on `p` (~8 d_head per (query, key) pair for versions 1-3 and the reference,
// ~30 d_head more for the warp-level versions, which meet their lanes at every shuffle and log
// every shared access for the bank count), and how many a lesson may ask for: the emulator does
// ~0.5e9 a second, so the budget is about 15 s.
double emulation_accesses(const Problem& p);
inline constexpr double emulation_budget = 6e9;

// Element counts for sizes and buffers: B*H*N*d_head and B*H*N*N.
std::size_t qkv_elements(const Problem& p);
std::size_t scores_elements(const Problem& p);

// q, k or v as tensor_core reads it: every element rounded to fp16 (or bf16) and back to float.
std::vector<float> rounded_to_16_bits(const float* x, std::size_t n, bool bf16 = false);

// The warp kernel with its K tile unpadded (8-way bank conflicts), for the lesson and the tests.
emulator::LaunchStats emulate_warp_unpadded(const Problem& p, const Inputs& in, float* out);

// Version 7 without its cp.async.wait_group: the emulator stops it at the first read of a tile a
// copy may still be writing (throws emulator::launch_error naming both lines). fp16, d_head 64 or
// 128, the default tile shape.
emulator::LaunchStats emulate_pipelined_without_wait(const Problem& p, const Inputs& in, float* out);

// Runs `v` on the CPU emulator: out (B, H, N, d_head) is written, global-memory traffic counted.
// Throws emulator::launch_error if the kernel misbehaves, std::invalid_argument for an
// unsupported problem.
emulator::LaunchStats emulate(Version v, const Problem& p, const Inputs& in, float* out,
                              emulator::Schedule schedule = emulator::default_schedule());

}  // namespace headwise::kernels
