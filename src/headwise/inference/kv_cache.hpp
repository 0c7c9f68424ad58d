// headwise/inference/kv_cache.hpp -- attention at inference time: a key/value cache for the
// grouped-query layer of reference/layer.hpp (query heads that share key/value heads).
//
// A decoder generates one token at a time. Token t's keys and values never change once computed
// (the causal mask keeps them from seeing later tokens), so they are kept in a cache and each new
// token projects only itself, appends its k and v, and attends with one (1, N + 1) row per head.
//
// With H_kv key/value heads for H query heads (grouped-query attention, reference/layer.hpp) the
// cache shrinks by H / H_kv, and so does the memory a decode step has to read.
//
// Shapes, in PyTorch's order:
//   x (B, N, d_model)   q (B, H, N, d_head)   k, v and the cache (B, H_kv, N, d_head)
//   in_proj_weight (H * d_head + 2 * H_kv * d_head, d_model) = [W_q; W_k; W_v], y = x . W^T + b
#pragma once

#include "headwise/reference/attention.hpp"
#include "headwise/reference/layer.hpp"
#include "headwise/reference/positions.hpp"
#include "headwise/base/random.hpp"
#include "headwise/base/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace headwise {

// The keys and values of every token seen so far, (B, H_kv, length, d_head) each, in storage
// allocated once for `capacity` tokens (the longest context allowed).
class KVCache {
public:
    KVCache(std::size_t batch, std::size_t kv_heads, std::size_t d_head, std::size_t capacity);

    std::size_t batch() const { return k_.shape()[0]; }
    std::size_t kv_heads() const { return k_.shape()[1]; }
    std::size_t capacity() const { return k_.shape()[2]; }
    std::size_t d_head() const { return k_.shape()[3]; }
    std::size_t length() const { return length_; }

    // Appends k and v (B, H_kv, n, d_head) at positions length() .. length() + n - 1. usage_error
    // when the shapes do not fit or the cache would grow past its capacity.
    void append(const Tensor4& k, const Tensor4& v);
    // The same from rows as a projection writes them: k and v (B, n, H_kv * d_head), each token's
    // heads side by side.
    void append_rows(const float* k, const float* v, std::size_t n);
    void clear() { length_ = 0; }

    // Copies of the filled part, (B, H_kv, length, d_head).
    Tensor4 keys() const;
    Tensor4 values() const;

    // Bytes the filled part holds at `bytes_per_element` (4 = float32 here, 2 = fp16 in a model).
    std::uint64_t bytes(std::size_t bytes_per_element = sizeof(float)) const;

    // The storage itself, (B, H_kv, capacity, d_head): rows past length() are garbage.
    const Tensor4& key_storage() const { return k_; }
    const Tensor4& value_storage() const { return v_; }

private:
    void require_room(std::size_t n) const;  // usage_error when n more tokens do not fit
    Tensor4 k_, v_;
    std::size_t length_ = 0;
};

// Runs new tokens x_new (B, n, d_model) through `m` with the cache: projects only them, appends
// their k and v, and lets new token i (absolute position P + i, P = the length before) attend to
// cached keys 0 .. P + i. Returns (B, n, d_model); `weights`, if given, gets (B, H, n, P + n).
Tensor3 attend_with_cache(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& x_new,
                          Tensor4* weights = nullptr);

// The prompt (B, N, d_model) on an empty cache: causal attention over it, its K and V cached.
Tensor3 prefill(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& prompt, Tensor4* weights = nullptr);

// One generated token x_new (B, 1, d_model): a (1, P + 1) row of weights per head. Every cached key
// lies in the past of the new token, so there is nothing to mask.
Tensor3 decode_step(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& x_new, Tensor4* weights = nullptr);

// One new token's attention over everything cached, on raw rows: the inner step of decode_step
// without its tensors, for a decoder that calls it 30 times a token (lesson 12; exercise 12's oracle).
// q (H, d_head), the new token's queries for batch row b, already rotated if the model uses RoPE
// (and the cache holds its own key and value already); out (H, d_head):
//   out_h = softmax(q_h K_g^T * scale) V_g,   g = h / (H / H_kv), over the cache's length() keys.
// The keys are read where the cache keeps them; nothing is masked, every cached key is in the new
// token's past. Only heads [first_head, last_head) are computed (their rows of out written): a
// caller can share the heads between threads.
void attend_new_token(const KVCache& cache, std::size_t b, const float* q, std::size_t heads, float scale, float* out,
                      std::size_t first_head = 0, std::size_t last_head = SIZE_MAX);

// ---------------------------------------------------------------------------------------------
// Rotary positions with the cache (lesson 09, step 7). A new token's key is rotated once, at its
// absolute position (the cache's length when it enters), and stored rotated: a cached key is never
// rotated again. The new token's query is rotated at the same, its own, position. Equal to the
// full causal forward_with_positions over every token, RoPE from position 0.
Tensor3 attend_with_cache(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& x_new, const Rope& rope,
                          Tensor4* weights = nullptr);
Tensor3 prefill(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& prompt, const Rope& rope,
                Tensor4* weights = nullptr);
Tensor3 decode_step(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& x_new, const Rope& rope,
                    Tensor4* weights = nullptr);

// ---------------------------------------------------------------------------------------------
// Counting (a multiply-add = 2 FLOPs; one attention block, all of its heads).

// W_q and W_o are (d_model, d_model); W_k and W_v are (H_kv * d_head, d_model) each.
std::uint64_t gqa_params(std::size_t d_model, std::size_t heads, std::size_t kv_heads, bool bias);

// FLOPs to produce the output of the token at position p (p tokens before it):
//   cached:     project one token (2 * d_model * (2 * d_model + 2 * H_kv * d_head)), q . k^T and
//               weights . v over p + 1 keys (4 * (p + 1) * d_model)
//   recomputed: the whole causal forward over p + 1 tokens again, as without a cache
double decode_flops(std::size_t d_model, std::size_t heads, std::size_t kv_heads, std::size_t position, bool cached);

// A published decoder configuration, as its config file gives it.
struct KvModel {
    std::string_view name;
    std::string_view attention;  // "MHA", "MQA" or "GQA"
    std::size_t layers;
    std::size_t d_model;
    std::size_t heads;
    std::size_t kv_heads;
    std::size_t d_head;
    std::size_t bytes_per_element;  // of the cache: 2 = fp16
    std::size_t trained_context;    // the context it was trained for
};

// GPT-2 small and XL (MHA), Falcon-7B (MQA), Llama-2-70B, Llama-3-8B, Llama-3-70B, Mistral-7B (GQA).
std::span<const KvModel> kv_models();

// layers x H_kv x d_head x 2 (K and V) x bytes per element.
std::uint64_t kv_bytes_per_token(const KvModel& m);
// For `tokens` tokens of `batch` sequences; usage_error if that does not fit in 64 bits.
std::uint64_t kv_cache_bytes(const KvModel& m, std::uint64_t tokens, std::uint64_t batch = 1);
// How many caches of `tokens` tokens fit in `memory` bytes (the weights not counted).
std::uint64_t caches_that_fit(const KvModel& m, std::uint64_t tokens, std::uint64_t memory);

}  // namespace headwise
