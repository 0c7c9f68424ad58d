// kernels/attention_kernels.hpp -- the three attention kernels, seen from plain C++ host code.
//
//   naive   naive.cuh    one thread per query row, 3 passes, N x N scratch in global memory
//   online  online.cuh   one thread per query row, 1 pass, running max / normaliser / output
//   tiled   tiled.cuh    one block per 64 query rows, K/V tiles in shared memory (flash-style)
//
// Every buffer is fp32 (or int for key_len), contiguous, in PyTorch's order:
//   q, k, v, out  (B, H, N, d_head)
//   key_len       (B): keys j >= key_len[b] are padding, masked for every query of sequence b
// This header knows neither CUDA nor the emulator's macros: the lesson and the tests include it.
// emulate() runs a kernel on the CPU emulator (always available); kernels/device.hpp runs it on
// a GPU when there is one.
#pragma once

#include "emulator/runtime.hpp"

#include <array>
#include <cstddef>
#include <string_view>

namespace headwise::kernels {

enum class Version { naive, online, tiled };
inline constexpr std::array<Version, 3> versions{Version::naive, Version::online, Version::tiled};
std::string_view name(Version v);

// online and tiled keep a query row in registers, so they exist for these d_head only;
// naive takes any d_head.
inline constexpr std::array<int, 5> compiled_d_heads{8, 16, 32, 64, 128};
bool supports(Version v, int d_head);

struct Problem {
    int batch = 1;   // B
    int heads = 1;   // H
    int seq = 1;     // N
    int d_head = 64;
    bool causal = false;
    float scale = 0.0f;  // 0 = the usual 1 / sqrt(d_head)
    float effective_scale() const;
};

struct Inputs {
    const float* q;        // (B, H, N, d_head)
    const float* k;        // (B, H, N, d_head)
    const float* v;        // (B, H, N, d_head)
    const int* key_len;    // (B)
};

struct LaunchConfig {
    std::array<unsigned, 3> grid;   // blocks, x y z
    std::array<unsigned, 3> block;  // threads per block, x y z
    std::size_t shared_bytes;       // static __shared__ memory per block
    std::size_t scratch_floats;     // extra global memory the kernel needs (naive's (B, H, N, N))
};
LaunchConfig launch_config(Version v, const Problem& p);

// Throws std::invalid_argument naming what is wrong: a size below 1, an index that would not fit
// in an int, a d_head `v` has no build for, a key_len outside [0, N] (when key_len is given).
void validate(Version v, const Problem& p, const int* key_len = nullptr);

// Element counts for sizes and buffers: B*H*N*d_head and B*H*N*N.
std::size_t qkv_elements(const Problem& p);
std::size_t scores_elements(const Problem& p);

// Runs `v` on the CPU emulator: out (B, H, N, d_head) is written, global-memory traffic counted.
// Throws emulator::launch_error if the kernel misbehaves, std::invalid_argument for an
// unsupported problem.
emulator::LaunchStats emulate(Version v, const Problem& p, const Inputs& in, float* out,
                              emulator::Schedule schedule = emulator::default_schedule());

}  // namespace headwise::kernels
