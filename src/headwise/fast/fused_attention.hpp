// headwise/fast/fused_attention.hpp -- the fast path behind scaled_dot_product_attention and
// MultiHeadAttention::forward when nobody asked for the (B, H, N_q, N_k) weights.
//
// Flash-style: instead of materialising every head's N_q x N_k weights, it takes a tile of
// queries against one block of keys at a time: the block's scores (one BLAS call), masked and
// exponentiated while they are in cache, then multiplied by the block of V (a second BLAS call)
// into the tile's running output. An online softmax carries each row's running max and sum from
// block to block (when the max grows, what was summed so far is scaled down by exp(old - new)),
// so memory is one tile of scores per core however long N is. Causal tiles stop at the diagonal,
// so the masked half is never computed. Tiles are shared between the machine's cores.
#pragma once

#include "headwise/base/attention_options.hpp"
#include "headwise/base/tensor.hpp"

#include <cstddef>
#include <string_view>

namespace headwise::fast {

// A (B, H, N, d_head) tensor anywhere in memory: element (b, h, n, c) is
// data[b * batch + h * head + n * row + c] (the d_head entries of a row are contiguous).
template <class T>
struct Strided {
    T* data;
    std::size_t batch, head, row;
};

// A contiguous (B, H, N, d_head) tensor, as it lies.
template <class T>
Strided<T> contiguous_heads(T* data, std::size_t heads, std::size_t n, std::size_t d_head) {
    return {data, heads * n * d_head, n * d_head, d_head};
}

// The heads of a row-major (B, N, ld) tensor where they lie, no copy into (B, H, N, d_head): head h
// starts at column h * head_columns of `data` (which may point into a row).
template <class T>
Strided<T> heads_in_rows(T* data, std::size_t n, std::size_t ld, std::size_t head_columns) {
    return {data, n * ld, head_columns, ld};
}

struct AttentionShape {
    std::size_t batch, heads, nq, nk, d_head;
};

// How a tile's two products are computed.
//   blas:                scores and exp(scores) . V as BLAS calls (any CPU, any d_head);
//   micro_kernel_avx512: hand-written AVX-512 register tiles (6 queries x 32 keys for the scores,
//                        6 queries x 64 columns for exp(scores) . V) on K^T packed once per head,
//                        so nothing is packed per tile; d_head a multiple of 16;
//   micro_kernel_avx2:   the same tiles in AVX2 + FMA's 16 registers of 8 floats (6 x 16 and
//                        6 x 16); d_head a multiple of 8.
// (docs/performance.md has the numbers that justify them.) What a CPU may run is capped by
// HEADWISE_ISA (fast/isa.hpp): with HEADWISE_ISA=avx2 an AVX-512 machine runs as an AVX2 one.
enum class Kernel { automatic, blas, micro_kernel_avx2, micro_kernel_avx512 };

// "automatic", "BLAS", "AVX2 micro-kernel", "AVX-512 micro-kernel": for reports.
std::string_view to_string(Kernel kernel);

// Queries per tile, keys per block, and the kernel. The defaults keep a BLAS tile's scores at
// 1 MiB (in L2); tests pass small blocks to exercise many blocks on small inputs.
struct Tiling {
    std::size_t rows = 256;
    std::size_t keys = 1024;
    Kernel kernel = Kernel::automatic;
};

// What Kernel::automatic picks on this CPU (fast_isa: HEADWISE_ISA or the CPU's widest) for this
// d_head: the AVX-512 tiles where they run, else the AVX2 ones, else BLAS.
Kernel choose_kernel(std::size_t d_head);

// The kernel that Tiling's default uses (automatic unless a benchmark or test says otherwise).
void set_default_kernel(Kernel kernel);

// The kernel a call asking for `asked` runs: automatic follows set_default_kernel, then this CPU
// and d_head; a micro-kernel where it cannot run (this CPU or HEADWISE_ISA lacks its instruction
// set, or d_head is not a multiple of its width) is blas.
Kernel resolve_kernel(Kernel asked, std::size_t d_head);

// A per-thread buffer of at least n floats, kept from call to call (slot 0: the multi-head
// projections, slot 1: the packed keys). Asked for in 2 MiB huge pages; contents are garbage.
float* thread_workspace(std::size_t n, int slot);

// lse, where given, (B, H, N_q) in C order, receives each row's log-sum-exp, max + log(sum) of its
// scaled scores (-inf for a row that saw no key): what the backward (fused_backward.hpp) needs to
// recompute the weights.
void fused_attention(const AttentionShape& shape, Strided<const float> q, Strided<const float> k,
                     Strided<const float> v, Strided<float> out, float scale, const AttentionOptions& options,
                     const Tiling& tiling = {}, float* lse = nullptr);

// Bytes fused_attention allocates, whatever N is: one tile of scores and running sums per core.
std::size_t fused_attention_scratch_bytes(const AttentionShape& shape, const Tiling& tiling = {});

}  // namespace headwise::fast
