// headwise/reference/layer_backward.hpp -- the backward of the attention layer of layer.hpp: how the
// loss changes with every input and parameter of nn.MultiheadAttention (and of its grouped-query,
// RoPE and ALiBi forms), given how it changes with the layer's output.
//
// The forward, step by step, and what each step's backward is (PyTorch's shapes and names):
//   q = query . W_q^T + b_q (B, N_q, H d_head)    dW_q = dq^T . query,  db_q = sum dq,  d_query += dq . W_q
//   k = key . W_k^T + b_k (B, N_k, H_kv d_head)   the same with dk (and dv for W_v, value)
//   q, k rotated by RoPE (p theta)                dq, dk rotated back by -p theta (R^T = R(-theta))
//   heads = attention(q, k, v)                    reference/attention_backward.hpp: dq, dk, dv per head;
//                                                 a shared K/V head's gradient is the sum over its query group
//   y = heads . W_o^T + b_o (B, N_q, d_model)     dW_o = d_y^T . heads,  db_o = sum d_y,  d_heads = d_y . W_o
// For self-attention query, key and value are one tensor x, so d_x is the sum of the three paths.
// ALiBi's bias is a constant: it has no gradient, but it is in the weights every gradient uses.
#pragma once

#include "headwise/base/attention_options.hpp"
#include "headwise/base/tensor.hpp"
#include "headwise/reference/layer.hpp"
#include "headwise/reference/positions.hpp"

#include <cstddef>
#include <vector>

namespace headwise {

// What the forward keeps for the backward (4 (B, N, d_model)-sized tensors and one float per query
// per head); nothing of size N_q x N_k unless ALiBi is on (its bias is (H, N_q, N_k)).
struct LayerTape {
    // q (B, N_q, H * d_head) and k (B, N_k, H_kv * d_head) after RoPE, v (B, N_k, H_kv * d_head):
    // self-attention keeps them side by side, one (B, N, H * d_head + 2 * H_kv * d_head) tensor
    // (one GEMM through W_in each way); cross-attention as three tensors.
    std::vector<Tensor3> projected;
    Tensor3 heads;           // (B, N_q, H * d_head): the heads' outputs side by side, before W_o
    std::vector<float> lse;  // (H / H_kv, B, H_kv, N_q): each query row's log-sum-exp
    bool self_attention = false;
};

// PyTorch's .grad of every input and parameter. Self-attention: `query` holds the three paths
// summed, `key` and `value` are empty. Biases are empty where the module has none.
struct LayerGrads {
    Tensor3 query;            // (B, N_q, d_model)
    Tensor3 key;              // (B, N_k, d_model)
    Tensor3 value;            // (B, N_k, d_model)
    Tensor2 in_proj_weight;   // (H * d_head + 2 * H_kv * d_head, d_model)
    Tensor1 in_proj_bias;     // (H * d_head + 2 * H_kv * d_head)
    Tensor2 out_proj_weight;  // (d_model, d_model)
    Tensor1 out_proj_bias;    // (d_model)
};

// The forward of forward_with_positions (layer.hpp), keeping its tape. Self-attention when
// query, key and value are the same tensor. query (B, N_q, d_model), key and value (B, N_k,
// d_model) -> (B, N_q, d_model).
Tensor3 layer_forward(const GroupedQueryAttention& m, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                      const PositionEncoding& positions, const AttentionOptions& options, LayerTape& tape);

// The backward from d_y (B, N_q, d_model), with the tape of the forward on the same inputs. The tape
// is used up: where the fused backward can (fast::backward_writes_in_place), dq, dk and dv are
// written over its q, k and v, and a one-shot process touches 3 (B, N, d_model) fewer floats.
LayerGrads layer_backward(const GroupedQueryAttention& m, const Tensor3& query, const Tensor3& key,
                          const Tensor3& value, const PositionEncoding& positions, const AttentionOptions& options,
                          LayerTape&& tape, const Tensor3& d_y);

// Bytes layer_forward and layer_backward allocate together beyond their inputs: the tape, the
// gradients and the backward's temporaries, for these sizes.
std::size_t layer_backward_bytes(const GroupedQueryAttention& m, std::size_t batch, std::size_t nq, std::size_t nk,
                                 bool self_attention, bool alibi);

}  // namespace headwise
