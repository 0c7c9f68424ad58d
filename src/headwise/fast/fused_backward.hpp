// headwise/fast/fused_backward.hpp -- the fast path behind scaled_dot_product_attention_backward and
// the attention layer's backward: FlashAttention-2's backward on the CPU.
//
// The forward keeps one number per query row, its log-sum-exp L_i = m_i + log(l_i) (the running max
// and sum of the online softmax); with it, any tile of weights comes back in one pass,
// P_ij = exp(scale q_i . k_j - L_i), so the (N_q, N_k) weights are never stored. Per pair of a tile
// of queries (rows) and a block of keys:
//   S  = scale q . k^T            (rows, keys)
//   P  = exp(S - L)                              masks: P = 0
//   dv += P^T . d_out             (keys, d_head)
//   dP = d_out . v^T              (rows, keys)
//   dS = P o (dP - D) * scale,  D_i = rowsum(d_out_i o out_i)  (equal to rowsum(P o dP), in O(d_head))
//   dq += dS . k                  (rows, d_head)
//   dk += dS^T . q                (keys, d_head)
// The five products are BLAS calls, or the forward's register tiles (register_tiles.hpp: AVX-512
// with d_head a multiple of 16, AVX2 with a multiple of 8) on the key block's K^T and V^T packed
// once, P and dS transposed in registers: then a causal pair computes only the keys each 6 queries
// may see. With a
// causal mask, pairs wholly above the diagonal are skipped. Memory: a few (rows, keys) tiles per core
// and D, whatever N is. With enough heads for every core, one head is one core's task; with fewer, a
// first pass gives each core blocks of keys (dk, dv) and a second tiles of queries (dq), which
// recomputes S and dP once more but keeps every core busy.
#pragma once

#include "headwise/base/attention_options.hpp"
#include "headwise/fast/fused_attention.hpp"

#include <cstddef>

namespace headwise::fast {

// How the work is shared out: automatic picks heads when there are at least two per core.
enum class BackwardSplit { automatic, heads, blocks };

// Queries per tile, keys per block, and the split. Tests pass small tiles to run many pairs on
// small inputs, and each split whatever the core count.
struct BackwardTiling {
    std::size_t rows = 128;
    std::size_t keys = 128;  // the micro-kernels round it up to a multiple of 32
    BackwardSplit split = BackwardSplit::automatic;
    Kernel kernel = Kernel::automatic;  // as the forward's Tiling::kernel
};

// The gradients of out = softmax(scale q . k^T + masks) v, given d_out. lse (B, H, N_q), C order,
// is the forward's log-sum-exp of each row (-inf where the row saw no key: its gradients are 0).
// dq, dk and dv are overwritten; they must not overlap the inputs, except where
// backward_writes_in_place says they may be q, k and v themselves.
void fused_attention_backward(const AttentionShape& shape, Strided<const float> q, Strided<const float> k,
                              Strided<const float> v, Strided<const float> out, Strided<const float> d_out,
                              const float* lse, Strided<float> dq, Strided<float> dk, Strided<float> dv, float scale,
                              const AttentionOptions& options, const BackwardTiling& tiling = {});

// The same backward from stored weights instead of the log-sum-exp: p (B, H, N_q, N_k), C order, is
// softmax(scale q . k^T + masks) as a forward that keeps it writes it (0 where masked). Each pair reads
// its tile of P there where fused_attention_backward computes it again (scale q . k^T and the exp);
// the tiles, the kernel, the split and every other product are the same. Lesson 10 times the two.
void fused_attention_backward_stored_p(const AttentionShape& shape, Strided<const float> q, Strided<const float> k,
                                       Strided<const float> v, Strided<const float> out, Strided<const float> d_out,
                                       const float* p, Strided<float> dq, Strided<float> dk, Strided<float> dv,
                                       float scale, const AttentionOptions& options, const BackwardTiling& tiling = {});

// True when dq, dk and dv may be exactly q, k and v (the same storage, the same strides): each core
// then packs a whole head's q and a key block's k and v before it writes any of their gradients,
// and writes nothing of another head's. (An activation-sized buffer the process need not touch.)
bool backward_writes_in_place(const AttentionShape& shape, const BackwardTiling& tiling = {});

// Bytes fused_attention_backward allocates, whatever N is: each core's tiles (P and dP; with the
// micro-kernels also their transposes, a key block's packed K and V, the packed q and d_out, and with
// a whole head per core its dq, dk and dv sums) and the rows' D (one head's per core, or every
// head's when the heads are fewer than the cores).
std::size_t fused_attention_backward_scratch_bytes(const AttentionShape& shape, const BackwardTiling& tiling = {});

}  // namespace headwise::fast
