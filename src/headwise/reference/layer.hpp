// headwise/reference/layer.hpp -- the attention layer: nn.MultiheadAttention with H query heads that
// share H_kv key/value heads (multi-query and grouped-query attention, lesson 08), told positions or
// not (RoPE and ALiBi, lesson 09). Its backward is beside it, in layer_backward.hpp.
//
// Grouped-query attention (GQA) gives H query heads only H_kv key/value heads, H_kv dividing H:
//   H_kv = H   multi-head attention (MHA), as in lessons 03-05
//   H_kv = 1   multi-query attention (MQA): every query head reads the same K and V
//   otherwise  query head h reads K/V head h / (H / H_kv): groups of H / H_kv neighbouring heads
//
// Shapes, in PyTorch's order:
//   x (B, N, d_model)   q (B, H, N, d_head)   k, v (B, H_kv, N, d_head)
//   in_proj_weight (H * d_head + 2 * H_kv * d_head, d_model) = [W_q; W_k; W_v], y = x . W^T + b
#pragma once

#include "headwise/base/attention_options.hpp"
#include "headwise/base/random.hpp"
#include "headwise/base/tensor.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/reference/attention.hpp"
#include "headwise/reference/positions.hpp"

#include <cstddef>

namespace headwise {

// H / H_kv, the query heads per key/value head. usage_error when either is 0 or H_kv does not
// divide H.
std::size_t query_group(std::size_t heads, std::size_t kv_heads);

// The key/value head that query head h reads when `group` query heads share one.
constexpr std::size_t kv_head_of(std::size_t h, std::size_t group) { return h / group; }

// (B, H_kv, N, d_head) -> (B, H_kv * group, N, d_head): each head repeated `group` times in place,
// heads 0, 0, ..., 1, 1, ... (torch.repeat_interleave(kv, group, dim=1)).
Tensor4 repeat_kv(const Tensor4& kv, std::size_t group);

// softmax(q k^T * scale + mask) v with query head h reading K/V head h / (H / H_kv).
//   q (B, H, N_q, d_head), k and v (B, H_kv, N_k, d_head) -> (B, H, N_q, d_head)
// Equal to scaled_dot_product_attention(q, repeat_kv(k, g), repeat_kv(v, g), ...) without the copies;
// `weights`, if given, receives (B, H, N_q, N_k).
Tensor4 grouped_query_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                                const AttentionOptions& options = {}, Tensor4* weights = nullptr);

// The same on tensors anywhere in memory (the cache's storage, a model's rows): q and out (B, H,
// N_q, d_head), k and v (B, H_kv, N_k, d_head) as shape and strides say; `scale` multiplies the scores.
void grouped_query_attention_into(const fast::AttentionShape& shape, std::size_t kv_heads, fast::Strided<const float> q,
                                  fast::Strided<const float> k, fast::Strided<const float> v, fast::Strided<float> out,
                                  float scale, const AttentionOptions& options);

// Grouped-query attention's parameters, laid out like nn.MultiheadAttention's with fewer K/V rows.
struct GroupedQueryAttention {
    std::size_t heads = 1;     // H, query heads
    std::size_t kv_heads = 1;  // H_kv, key/value heads
    Tensor2 in_proj_weight;    // (H * d_head + 2 * H_kv * d_head, d_model): [W_q; W_k; W_v]
    Tensor1 in_proj_bias;      // (H * d_head + 2 * H_kv * d_head) or empty
    Tensor2 out_proj_weight;   // (d_model, d_model), W_o
    Tensor1 out_proj_bias;     // (d_model) or empty

    std::size_t d_model() const { return out_proj_weight.shape()[0]; }
    std::size_t d_head() const { return d_model() / heads; }
    std::size_t group() const { return heads / kv_heads; }
    std::size_t kv_width() const { return kv_heads * d_head(); }  // rows of W_k (and of W_v)

    static GroupedQueryAttention random(std::size_t d_model, std::size_t heads, std::size_t kv_heads, bool bias,
                                        Random& rng);
    // H_kv = H: the same module, its weights copied.
    static GroupedQueryAttention from_multi_head(const MultiHeadAttention& m);
    // The multi-head module that computes the same function: every K/V head's rows of W_k, W_v
    // (and biases) repeated for each query head of its group.
    MultiHeadAttention with_repeated_kv() const;

    // Checks every shape; throws usage_error naming what disagrees.
    void validate() const;

    // x (B, N, d_model) -> q (B, H, N, d_head); k and v (B, H_kv, N, d_head).
    Tensor4 project_q(const Tensor3& x) const;
    Tensor4 project_k(const Tensor3& x) const;
    Tensor4 project_v(const Tensor3& x) const;

    // query (B, N_q, d_model), key and value (B, N_k, d_model) -> (B, N_q, d_model).
    Tensor3 forward(const Tensor3& query, const Tensor3& key, const Tensor3& value,
                    const AttentionOptions& options = {}, Tensor4* weights = nullptr) const;
    Tensor3 forward(const Tensor3& x, const AttentionOptions& options = {}, Tensor4* weights = nullptr) const {
        return forward(x, x, x, options, weights);
    }
};

// The layer told positions (reference/positions.hpp): q and k rotated (RoPE), the ALiBi bias on the
// scores, or both. query (B, N_q, d_model), key and value (B, N_k, d_model) -> (B, N_q, d_model);
// `weights`, if given, receives (B, H, N_q, N_k).
Tensor3 forward_with_positions(const GroupedQueryAttention& m, const Tensor3& query, const Tensor3& key,
                               const Tensor3& value, const PositionEncoding& positions,
                               const AttentionOptions& options = {}, Tensor4* weights = nullptr);

}  // namespace headwise
