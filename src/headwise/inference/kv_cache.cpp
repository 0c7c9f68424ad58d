#include "headwise/inference/kv_cache.hpp"

#include "headwise/fast/fused_attention.hpp"
#include "headwise/base/limits.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/fast/vexp.hpp"

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace headwise {

namespace {

using fast::Strided;

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) {
        throw usage_error(fmt::format("{}: {} x {} does not fit in 64 bits", what, a, b));
    }
    return a * b;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

KVCache::KVCache(std::size_t batch, std::size_t kv_heads, std::size_t d_head, std::size_t capacity) {
    if (batch == 0 || kv_heads == 0 || d_head == 0 || capacity == 0) {
        throw usage_error(
            fmt::format("KV cache: every size must be at least 1 (B = {}, H_kv = {}, d_head = {}, capacity = {})",
                        batch, kv_heads, d_head, capacity));
    }
    std::uint64_t n =
        checked_mul(checked_mul(batch, kv_heads, "KV cache"), checked_mul(capacity, d_head, "KV cache"), "KV cache");
    checked_mul(n, 2 * sizeof(float), "KV cache bytes");
    const std::array<std::size_t, 4> shape{batch, kv_heads, capacity, d_head};
    k_ = Tensor4::from_shape(shape);
    v_ = Tensor4::from_shape(shape);
}

void KVCache::append(const Tensor4& k, const Tensor4& v) {
    const auto& s = k.shape();
    if (k.shape() != v.shape() || s[0] != batch() || s[1] != kv_heads() || s[3] != d_head()) {
        throw usage_error(
            fmt::format("KV cache: k ({}, {}, {}, {}) and v ({}, {}, {}, {}) must both be (B, H_kv, n, d_head) "
                        "= ({}, {}, n, {})",
                        s[0], s[1], s[2], s[3], v.shape()[0], v.shape()[1], v.shape()[2], v.shape()[3], batch(),
                        kv_heads(), d_head()));
    }
    const std::size_t n = s[2];
    require_room(n);
    const std::size_t dh = d_head(), cap = capacity();
    for (std::size_t b = 0; b < batch(); ++b)
        for (std::size_t h = 0; h < kv_heads(); ++h) {
            const std::size_t src = (b * kv_heads() + h) * n * dh, dst = ((b * kv_heads() + h) * cap + length_) * dh;
            std::copy_n(k.data() + src, n * dh, k_.data() + dst);
            std::copy_n(v.data() + src, n * dh, v_.data() + dst);
        }
    length_ += n;
}

void KVCache::require_room(std::size_t n) const {
    if (n > capacity() - length_) {
        throw usage_error(fmt::format("KV cache: {} cached + {} new tokens would exceed its capacity of {} tokens",
                                      length_, n, capacity()));
    }
}

void KVCache::append_rows(const float* k, const float* v, std::size_t n) {
    require_room(n);
    const std::size_t dh = d_head(), cap = capacity(), heads = kv_heads();
    for (std::size_t b = 0; b < batch(); ++b)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t h = 0; h < heads; ++h) {
                const std::size_t src = ((b * n + i) * heads + h) * dh,
                                  dst = ((b * heads + h) * cap + length_ + i) * dh;
                std::copy_n(k + src, dh, k_.data() + dst);
                std::copy_n(v + src, dh, v_.data() + dst);
            }
    length_ += n;
}

Tensor4 KVCache::keys() const { return xt::view(k_, xt::all(), xt::all(), xt::range(0, length_), xt::all()); }
Tensor4 KVCache::values() const { return xt::view(v_, xt::all(), xt::all(), xt::range(0, length_), xt::all()); }

std::uint64_t KVCache::bytes(std::size_t bytes_per_element) const {
    return 2ull * batch() * kv_heads() * length_ * d_head() * bytes_per_element;
}

namespace {

// attend_with_cache with or without RoPE (rope null: none).
Tensor3 attend_cached(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& x_new, const Rope* rope,
                      Tensor4* weights) {
    m.validate();
    const std::size_t batch = x_new.shape()[0], n = x_new.shape()[1], d = m.d_model(), dh = m.d_head();
    if (cache.batch() != batch || cache.kv_heads() != m.kv_heads || cache.d_head() != dh) {
        throw usage_error(
            fmt::format("KV cache (B, H_kv, ., d_head) = ({}, {}, ., {}) does not fit the input: B = {}, "
                        "H_kv = {}, d_head = {}",
                        cache.batch(), cache.kv_heads(), cache.d_head(), batch, m.kv_heads, dh));
    }
    if (n == 0 || x_new.shape()[2] != d) {
        throw usage_error(fmt::format("new tokens must be (B, n >= 1, d_model = {}), got ({}, {}, {})", d, batch, n,
                                      x_new.shape()[2]));
    }
    const std::size_t past = cache.length();
    if (n > cache.capacity() - past) {
        throw usage_error(fmt::format("KV cache: {} cached + {} new tokens would exceed its capacity of {} tokens",
                                      past, n, cache.capacity()));
    }
    Tensor4 q = m.project_q(x_new);  // (B, H, n, d_head): only the new tokens are projected
    Tensor4 k = m.project_k(x_new);  // (B, H_kv, n, d_head)
    if (rope != nullptr) {           // new token i sits at position past + i: rotated there, once
        q = apply_rope(q, *rope, past);
        k = apply_rope(k, *rope, past);
    }
    cache.append(k, m.project_v(x_new));  // cache (B, H_kv, past + n, d_head)
    const std::size_t nk = past + n;

    // New token i sits at position past + i and sees keys 0 .. past + i. With one new token that is
    // every key in the cache: no mask at all.
    AttentionOptions options;
    Mask2 mask;
    if (n > 1) {
        mask = Mask2::from_shape({n, nk});  // (n, past + n), true = hidden
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < nk; ++j) mask(i, j) = j > past + i;
        options.attn_mask = &mask;
    }
    Tensor4 heads_out;  // (B, H, n, d_head)
    if (weights != nullptr) {
        heads_out = grouped_query_attention(q, cache.keys(), cache.values(), options, weights);
    } else {  // straight from the cache's storage, nothing copied
        heads_out = Tensor4::from_shape({batch, m.heads, n, dh});
        const std::size_t cap = cache.capacity(), kvh = m.kv_heads;
        const auto k = fast::contiguous_heads(cache.key_storage().data(), kvh, cap, dh);
        const auto v = fast::contiguous_heads(cache.value_storage().data(), kvh, cap, dh);
        grouped_query_attention_into({batch, m.heads, n, nk, dh}, kvh,
                                     fast::contiguous_heads<const float>(q.data(), m.heads, n, dh), k, v,
                                     fast::contiguous_heads<float>(heads_out.data(), m.heads, n, dh),
                                     1.0f / std::sqrt(static_cast<float>(dh)), options);
    }
    return linear(merge_heads(heads_out), m.out_proj_weight, m.out_proj_bias);  // (B, n, d_model)
}

}  // namespace

Tensor3 attend_with_cache(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& x_new, Tensor4* weights) {
    return attend_cached(m, cache, x_new, nullptr, weights);
}

Tensor3 attend_with_cache(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& x_new, const Rope& rope,
                          Tensor4* weights) {
    validate(rope, m.d_head());
    return attend_cached(m, cache, x_new, &rope, weights);
}

namespace {
void require_empty(const KVCache& cache) {
    if (cache.length() != 0) {
        throw usage_error(
            fmt::format("prefill needs an empty KV cache; this one already holds {} tokens", cache.length()));
    }
}
void require_one_token(const Tensor3& x_new) {
    if (x_new.shape()[1] != 1) {
        throw usage_error(
            fmt::format("decode_step takes one new token, (B, 1, d_model); got {} tokens", x_new.shape()[1]));
    }
}
}  // namespace

Tensor3 prefill(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& prompt, Tensor4* weights) {
    require_empty(cache);
    return attend_with_cache(m, cache, prompt, weights);
}

namespace {

// 16 floats as one value: in a clone compiled for AVX-512 one register, for AVX2 two, for plain
// x86-64 four, and kept in registers where an array of floats would live on the stack.
using v16 = float __attribute__((vector_size(64)));

// Always inlined into the clones below, so v16 never crosses a call: GCC's note that passing it
// would change the ABI without AVX-512 does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

[[gnu::always_inline]] inline v16 load16(const float* p) {
    v16 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

[[gnu::always_inline]] inline float sum16(v16 v) {
    float s = 0.0f;
    for (int l = 0; l < 16; ++l) s += v[l];
    return s;
}

// y[row] = scale * dot(a, b + row * ldb) for `rows` <= 4 rows of b; n a multiple of 16.
[[gnu::always_inline]] inline void dots(const float* a, const float* b, std::size_t ldb, std::size_t n,
                                        std::size_t rows, float scale, float* y) {
    v16 part[4] = {};
    for (std::size_t i = 0; i < n; i += 16) {
        const v16 x = load16(a + i);
        for (std::size_t row = 0; row < rows; ++row) part[row] += x * load16(b + row * ldb + i);
    }
    for (std::size_t row = 0; row < rows; ++row) y[row] = scale * sum16(part[row]);
}

// o (d) = inv * sum_j p_j v_j over the rows j < keys of v (d apart); d a multiple of 16.
[[gnu::always_inline]] inline void weighted_rows(const float* p, const float* v, std::size_t keys, std::size_t d,
                                                 float inv, float* o) {
    for (std::size_t e0 = 0; e0 < d; e0 += 64) {
        const std::size_t chunks = std::min<std::size_t>(4, (d - e0) / 16);
        v16 acc[4] = {};
        for (std::size_t j = 0; j < keys; ++j)
            for (std::size_t c = 0; c < chunks; ++c) acc[c] += p[j] * load16(v + j * d + e0 + 16 * c);
        for (std::size_t c = 0; c < chunks; ++c) {
            const v16 out = acc[c] * inv;
            __builtin_memcpy(o + e0 + 16 * c, &out, sizeof out);
        }
    }
}

#pragma GCC diagnostic pop

}  // namespace

// Compiled three times, the widest the CPU runs chosen when the program loads (the library is built for
// any x86-64, so without this the loops would use 128-bit SSE).
__attribute__((target_clones("avx512f", "avx2", "default"))) void attend_new_token(const KVCache& cache, std::size_t b,
                                                                                   const float* q, std::size_t heads,
                                                                                   float scale, float* out,
                                                                                   std::size_t first_head,
                                                                                   std::size_t last_head) {
    const std::size_t kv_heads = cache.kv_heads(), d = cache.d_head(), n = cache.length();
    const std::size_t group = query_group(heads, kv_heads);
    if (b >= cache.batch()) throw usage_error(fmt::format("batch row {} of a cache of {}", b, cache.batch()));
    if (n == 0) throw usage_error("attend_new_token: the cache is empty (append the new token's k and v first)");
    if (d % 16 != 0) throw usage_error(fmt::format("attend_new_token: d_head {} is not a multiple of 16", d));
    last_head = std::min(last_head, heads);
    thread_local std::vector<float> scores;
    scores.resize(n);
    for (std::size_t h = first_head; h < last_head; ++h) {
        const std::size_t g = h / group;  // the K/V head query head h reads
        const float* k = cache.key_storage().data() + (b * kv_heads + g) * cache.capacity() * d;
        const float* v = cache.value_storage().data() + (b * kv_heads + g) * cache.capacity() * d;
        for (std::size_t j = 0; j < n; j += 4)  // four keys at a time: four independent chains
            dots(q + h * d, k + j * d, d, d, std::min<std::size_t>(4, n - j), scale, scores.data() + j);
        const float sum = fast::exp_shifted_sum(scores.data(), n, fast::row_max(scores.data(), n));
        // out = sum_j p_j v_j, 64 columns at a time: their sums stay in registers
        weighted_rows(scores.data(), v, n, d, 1.0f / sum, out + h * d);
    }
}

Tensor3 decode_step(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& x_new, Tensor4* weights) {
    require_one_token(x_new);
    return attend_with_cache(m, cache, x_new, weights);
}

Tensor3 prefill(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& prompt, const Rope& rope,
                Tensor4* weights) {
    require_empty(cache);
    return attend_with_cache(m, cache, prompt, rope, weights);
}

Tensor3 decode_step(const GroupedQueryAttention& m, KVCache& cache, const Tensor3& x_new, const Rope& rope,
                    Tensor4* weights) {
    require_one_token(x_new);
    return attend_with_cache(m, cache, x_new, rope, weights);
}

// ---------------------------------------------------------------------------------------------

std::uint64_t gqa_params(std::size_t d_model, std::size_t heads, std::size_t kv_heads, bool bias) {
    query_group(heads, kv_heads);
    if (d_model == 0 || d_model % heads != 0) {
        throw usage_error(fmt::format("d_model = {} is not divisible by heads = {}", d_model, heads));
    }
    const std::uint64_t d = d_model, kv = std::uint64_t(kv_heads) * (d_model / heads);
    return 2 * d * d + 2 * kv * d + (bias ? 2 * d + 2 * kv : 0);
}

double decode_flops(std::size_t d_model, std::size_t heads, std::size_t kv_heads, std::size_t position, bool cached) {
    query_group(heads, kv_heads);
    const double d = double(d_model), kv = double(kv_heads) * double(d_model / heads);
    const double projections = 2.0 * d * (2.0 * d + 2.0 * kv);  // W_q, W_o (d x d) and W_k, W_v (kv x d), one token
    const double n = double(position) + 1.0;                    // keys the token attends to
    if (cached) return projections + 4.0 * n * d;
    // Without a cache: all n tokens again, each query i over its i + 1 keys (sum = n (n + 1) / 2).
    return n * projections + 4.0 * d * n * (n + 1.0) / 2.0;
}

std::span<const KvModel> kv_models() {
    // From each model's published configuration (config.json / the paper): layers, d_model,
    // attention heads, key/value heads, head width; the cache in fp16.
    static constexpr KvModel models[] = {
        {"GPT-2 small", "MHA", 12, 768, 12, 12, 64, 2, 1024},  {"GPT-2 XL", "MHA", 48, 1600, 25, 25, 64, 2, 1024},
        {"Falcon-7B", "MQA", 32, 4544, 71, 1, 64, 2, 2048},    {"Mistral-7B", "GQA", 32, 4096, 32, 8, 128, 2, 8192},
        {"Llama-3-8B", "GQA", 32, 4096, 32, 8, 128, 2, 8192},  {"Llama-2-70B", "GQA", 80, 8192, 64, 8, 128, 2, 4096},
        {"Llama-3-70B", "GQA", 80, 8192, 64, 8, 128, 2, 8192},
    };
    return models;
}

std::uint64_t kv_bytes_per_token(const KvModel& m) {
    return std::uint64_t(m.layers) * m.kv_heads * m.d_head * 2 * m.bytes_per_element;
}

std::uint64_t kv_cache_bytes(const KvModel& m, std::uint64_t tokens, std::uint64_t batch) {
    return checked_mul(checked_mul(kv_bytes_per_token(m), tokens, "KV cache bytes"), batch, "KV cache bytes");
}

std::uint64_t caches_that_fit(const KvModel& m, std::uint64_t tokens, std::uint64_t memory) {
    const std::uint64_t one = kv_cache_bytes(m, tokens);
    return one == 0 ? 0 : memory / one;
}

}  // namespace headwise
