// kernels/attention_backward.hpp -- the two attention backward kernels, seen from plain C++ host code.
//
//   naive  backward_naive.cuh  the forward keeps P (B, H, N, N); dP and dS go through an N x N
//                              scratch; one thread per query row (dQ), then one per key row (dK, dV)
//   flash  backward_flash.cuh  FlashAttention-2: the forward keeps only the log-sum-exp (B, H, N);
//                              one block per key tile recomputes P, dK and dV in registers, dQ by atomicAdd
//
// Both run after a forward that saves what they read: the tiled kernel (version 3, tiled.cuh) with
// its log-sum-exp output writes O and lse; the naive version then materialises P from them
// (attention_weights), as an autograd that stores the weights would have kept them. Buffers as
// in attention_kernels.hpp: fp32, contiguous, PyTorch's order:
//   q, k, v, d_out, dq, dk, dv  (B, H, N, d_head)
//   key_len                     (B): keys j >= key_len[b] are padding
// Gradients of masked keys are zero; a query row with every key masked gets dq = 0.
#pragma once

#include "kernels/attention_kernels.hpp"

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace headwise::kernels {

enum class BackwardVersion { naive, flash };
inline constexpr std::array<BackwardVersion, 2> backward_versions{BackwardVersion::naive, BackwardVersion::flash};
std::string_view name(BackwardVersion v);  // "naive_backward", "flash_backward"

// The forward they follow (version 3 with its log-sum-exp) is built for compiled_d_heads: so are both.
bool supports(BackwardVersion v, int d_head);
// Throws std::invalid_argument as validate(Version, ...) does; naive also when its two (B, H, N, N)
// buffers (P and dS) would pass naive_scratch_limit floats each.
void validate(BackwardVersion v, const Problem& problem, const int* key_len = nullptr);

struct BackwardInputs {
    const float* q;      // (B, H, N, d_head)
    const float* k;      // (B, H, N, d_head)
    const float* v;      // (B, H, N, d_head)
    const int* key_len;  // (B)
    const float* d_out;  // (B, H, N, d_head): dL/dO, the gradient arriving at the attention's output
};

struct Gradients {
    float* dq;  // (B, H, N, d_head)
    float* dk;  // (B, H, N, d_head)
    float* dv;  // (B, H, N, d_head)
};

// One thread (or block) per `per_block` rows of each (b, h): grid (ceil(N / per_block), H, B).
std::array<unsigned, 3> row_grid(const Problem& problem, int per_block);

// What the emulator counted: the forward that saved the backward's inputs, and the backward's kernels.
struct BackwardStats {
    emulator::LaunchStats forward;   // naive: tiled + lse, then P; flash: tiled + lse
    emulator::LaunchStats backward;  // naive: rows, columns; flash: delta = rowsum(dO o O), then the key tiles
};

// Runs the forward and then version v's backward on the CPU emulator; g's three buffers are written
// (dq zeroed first where it is accumulated). Throws like emulate().
BackwardStats emulate_backward(BackwardVersion v, const Problem& problem, const BackwardInputs& in, const Gradients& g,
                               emulator::Schedule schedule = emulator::default_schedule());

// Version 3 (tiled) with its second output: out (B, H, N, d_head) and lse (B, H, N), the log of
// each row's softmax normaliser, lse_i = log sum_j exp(q_i . k_j * scale) over its visible keys
// (-inf for a row whose keys are all masked).
emulator::LaunchStats emulate_with_lse(const Problem& problem, const Inputs& in, float* out, float* lse,
                                       emulator::Schedule schedule = emulator::default_schedule());

// Global-memory bytes the emulator counts for each backward version and the forward it needs, on
// N(0, 1) inputs of shape problem (key_len = N): what lesson 10 prints. The naive forward's writes include
// P (4 B*H*N^2 bytes); the flash forward's, the log-sum-exp (4 B*H*N).
struct BackwardTraffic {
    BackwardVersion version;
    emulator::Traffic forward, backward;
};
std::vector<BackwardTraffic> backward_traffic(const Problem& problem, std::uint64_t seed = 10);

}  // namespace headwise::kernels
