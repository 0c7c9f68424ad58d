// headwise/reference/attention.hpp -- linear layers, head split/merge and scaled dot-product attention.
//
// Conventions are PyTorch's, so results can be compared with torch.nn.MultiheadAttention:
//   activations  (B, N, d_model)          batch first
//   per head     (B, H, N, d_head)
//   weights      (out_features, in_features), y = x . W^T + b
//   masks        true = "masked out" (ignored), as in key_padding_mask / bool attn_mask
#pragma once

#include "headwise/base/attention_options.hpp"
#include "headwise/base/random.hpp"
#include "headwise/base/tensor.hpp"

#include <optional>

namespace headwise {

// y (B, N, out) = x (B, N, in) . w^T (in, out) + b (out). `b` may be empty (no bias).
Tensor3 linear(const Tensor3& x, const Tensor2& w, const Tensor1& b = {});

// (B, N, d_model) -> (B, N, H, d_head) -> (B, H, N, d_head): reshape, then swap N and H.
Tensor4 split_heads(const Tensor3& x, std::size_t heads);
// (B, H, N, d_head) -> (B, N, H, d_head) -> (B, N, d_model): the exact inverse.
Tensor3 merge_heads(const Tensor4& x);

// The lower-triangular causal mask as PyTorch spells it: (N, N), true above the diagonal.
Mask2 causal_mask(std::size_t n);

// softmax(q k^T * scale + mask) v for every (batch, head).
//   q (B, H, N_q, d_head), k and v (B, H, N_k, d_head) -> (B, H, N_q, d_head)
// If `weights` is given it receives the attention weights (B, H, N_q, N_k).
// A query row whose keys are all masked gets zero weights and a zero output (never NaN).
Tensor4 scaled_dot_product_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                                     const AttentionOptions& options = {}, Tensor4* weights = nullptr);

// The same computation in double precision with plain loops: slow, obvious, and the oracle the
// fast paths and the CUDA kernels are checked against.
Tensor4 attention_reference(const Tensor4& q, const Tensor4& k, const Tensor4& v, const AttentionOptions& options = {},
                            Tensor4* weights = nullptr);

// Throws usage_error naming the shapes unless attn_mask (where given) is (N_q, N_k) and
// key_padding_mask (where given) is (B, N_k).
void check_masks(const AttentionOptions& options, std::size_t batch, std::size_t nq, std::size_t nk);

// nn.MultiheadAttention's parameters, in its layout.
struct MultiHeadAttention {
    std::size_t heads = 1;
    Tensor2 in_proj_weight;   // (3 * d_model, d_model), rows stacked [W_q; W_k; W_v]
    Tensor1 in_proj_bias;     // (3 * d_model) or empty
    Tensor2 out_proj_weight;  // (d_model, d_model), W_o
    Tensor1 out_proj_bias;    // (d_model) or empty

    std::size_t d_model() const { return out_proj_weight.shape()[0]; }

    // Random parameters, seeded (see random.hpp), initialised like PyTorch's defaults in spirit.
    static MultiHeadAttention random(std::size_t d_model, std::size_t heads, bool bias, Random& rng);

    // Checks every shape against d_model and heads; throws usage_error naming what disagrees.
    void validate() const;

    // query (B, N_q, d_model), key and value (B, N_k, d_model) -> (B, N_q, d_model).
    // `weights`, if given, receives the per-head weights (B, H, N_q, N_k).
    // Without `weights` the fast path runs on every core, and it keeps its scratch (the projected
    // Q, K, V and the merged heads: 4 * B * N * d_model floats for self-attention, done in chunks
    // of batch elements and heads past 64 MiB) per calling thread from call to call; the memory
    // goes back when that thread ends. Without weights nothing of size N_q x N_k is allocated.
    Tensor3 forward(const Tensor3& query, const Tensor3& key, const Tensor3& value,
                    const AttentionOptions& options = {}, Tensor4* weights = nullptr) const;
    Tensor3 forward(const Tensor3& x, const AttentionOptions& options = {}, Tensor4* weights = nullptr) const {
        return forward(x, x, x, options, weights);
    }

    // Bytes forward() allocates beyond its inputs and output for these sizes: with weights, the
    // (B, H, N_q, N_k) weights and the steps' copies; without, the fast path's bounded scratch.
    std::size_t forward_scratch_bytes(std::size_t batch, std::size_t nq, std::size_t nk, bool with_weights) const;

private:
    // The fast path (no weights requested): packed projections, fused tiles, no head copies.
    Tensor3 forward_fused(const Tensor3& query, const Tensor3& key, const Tensor3& value,
                          const AttentionOptions& options) const;
};

namespace sdpa {
// Throws usage_error naming the shapes unless q (B, H, N_q, d_head), k and v (B, H, N_k, d_head) fit.
void check_rank_match(const Tensor4& q, const Tensor4& k, const Tensor4& v);
// Is key j hidden from query i of batch b (causal, attn_mask or key padding)?
bool masked(const AttentionOptions& options, std::size_t b, std::size_t i, std::size_t j);
// The fast path's workspace cap (64 MiB; 0 restores it). Tests shrink it to run the chunked path
// (batch elements, then groups of heads, one at a time) on small inputs.
void set_fused_budget(std::size_t bytes);
}  // namespace sdpa

// Largest absolute difference between two tensors of the same shape (throws otherwise).
template <class A, class B>
double max_abs_diff(const A& a, const B& b);

}  // namespace headwise

#include "headwise/reference/attention_inl.hpp"
