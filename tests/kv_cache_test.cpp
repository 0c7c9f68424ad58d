// tests for headwise/inference/kv_cache.hpp: the KV cache and the counting (the grouped-query
// layer it caches for is tested in layer_test.cpp).
//
// Oracles: the full causal recompute through the double-precision reference (gqa_reference.hpp),
// and figures worked out by hand from each model's published configuration.
#include "headwise/inference/kv_cache.hpp"

#include "gqa_reference.hpp"

#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include <cstdint>
#include <limits>

using namespace headwise;

namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// Largest |difference| between tokens [from, to) of two (B, N, d_model) tensors.
double diff_tokens(const Tensor3& a, std::size_t a0, const Tensor3& full, std::size_t from, std::size_t to) {
    const Tensor3 x = xt::view(a, xt::all(), xt::range(a0, a0 + (to - from)), xt::all());
    const Tensor3 y = xt::view(full, xt::all(), xt::range(from, to), xt::all());
    return max_abs_diff(x, y);
}

const KvModel& model(std::string_view name) {
    for (const KvModel& m : kv_models())
        if (m.name == name) return m;
    FAIL("no model " << name);
    throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("prefill then one-token decode steps equal the full causal recompute", "[kv_cache]") {
    Random rng(21);
    const std::size_t B = 3, N = 12, prompt = 4, d = 32, H = 8;
    const Tensor3 x = rng.normal<3>({B, N, d});
    for (std::size_t kv_heads : {1u, 2u, 8u}) {
        const GroupedQueryAttention m = GroupedQueryAttention::random(d, H, kv_heads, true, rng);
        const Tensor3 full = reference_forward(m, x, /*causal=*/true);  // (B, N, d_model)
        KVCache cache(B, kv_heads, d / H, N);
        const Tensor3 first = prefill(m, cache, xt::view(x, xt::all(), xt::range(0, prompt), xt::all()));
        INFO("H_kv = " << kv_heads);
        CHECK(cache.length() == prompt);
        CHECK(diff_tokens(first, 0, full, 0, prompt) < 1e-5);
        for (std::size_t t = prompt; t < N; ++t) {
            Tensor4 w;
            const Tensor3 x_t = xt::view(x, xt::all(), xt::range(t, t + 1), xt::all());  // (B, 1, d_model)
            const Tensor3 y = t % 2 ? decode_step(m, cache, x_t) : decode_step(m, cache, x_t, &w);
            CHECK(cache.length() == t + 1);
            CHECK(diff_tokens(y, 0, full, t, t + 1) < 1e-5);
            if (t % 2 == 0)
                CHECK(w.shape() == std::array<std::size_t, 4>{B, H, 1, t + 1});  // one (1, t + 1) row per head
        }
        CHECK_THROWS_AS(decode_step(m, cache, xt::view(x, xt::all(), xt::range(0, 1), xt::all())),
                        usage_error);  // full
    }
}

TEST_CASE("with RoPE, prefill then decode steps equal the full causal recompute, keys rotated once", "[kv_cache]") {
    Random rng(31);
    const std::size_t B = 2, N = 11, prompt = 3, d = 32, H = 4;
    const Tensor3 x = rng.normal<3>({B, N, d});
    for (const RopeLayout layout : {RopeLayout::half, RopeLayout::interleaved})
        for (std::size_t kv_heads : {1u, 2u, 4u}) {
            const GroupedQueryAttention m = GroupedQueryAttention::random(d, H, kv_heads, true, rng);
            const Rope rope{10000.0, layout};
            // Oracle: every token's q and k rotated at its position, then the double-precision reference.
            AttentionOptions causal;
            causal.causal = true;
            const Tensor4 heads_ref = attention_reference(apply_rope(m.project_q(x), rope),
                                                          repeat_kv(apply_rope(m.project_k(x), rope), H / kv_heads),
                                                          repeat_kv(m.project_v(x), H / kv_heads), causal);
            const Tensor3 full_ref = linear(merge_heads(heads_ref), m.out_proj_weight, m.out_proj_bias);
            const Tensor3 full = forward_with_positions(m, x, x, x, PositionEncoding{rope}, causal);
            INFO("layout " << layout_name(layout) << ", H_kv = " << kv_heads);
            CHECK(max_abs_diff(full, full_ref) < 1e-5);

            KVCache cache(B, kv_heads, d / H, N);
            Tensor3 decoded = Tensor3::from_shape({B, N, d});
            xt::view(decoded, xt::all(), xt::range(0, prompt), xt::all()) =
                prefill(m, cache, xt::view(x, xt::all(), xt::range(0, prompt), xt::all()), rope);
            for (std::size_t t = prompt; t < N; ++t)
                xt::view(decoded, xt::all(), xt::range(t, t + 1), xt::all()) =
                    decode_step(m, cache, xt::view(x, xt::all(), xt::range(t, t + 1), xt::all()), rope);
            CHECK(max_abs_diff(decoded, full) <= 1e-6);
            // The cache holds the keys rotated at their own positions, v as projected.
            CHECK(max_abs_diff(cache.keys(), apply_rope(m.project_k(x), rope)) <
                  1e-5);  // one token vs all: BLAS rounding
            CHECK(max_abs_diff(cache.values(), m.project_v(x)) < 1e-5);
        }
}

TEST_CASE("with RoPE, a cached key rotated at the wrong position breaks the decode", "[kv_cache]") {
    Random rng(32);
    const std::size_t B = 1, N = 8, d = 16, H = 2;
    const Tensor3 x = rng.normal<3>({B, N, d});
    const GroupedQueryAttention m = GroupedQueryAttention::random(d, H, H, true, rng);
    const Rope rope;
    AttentionOptions causal;
    causal.causal = true;
    const Tensor3 full = forward_with_positions(m, x, x, x, PositionEncoding{rope}, causal);
    // A cache whose keys were all rotated at position 0 (i.e. not at all), queries at their own.
    const Tensor3 last = xt::view(x, xt::all(), xt::range(N - 1, N), xt::all());     // (B, 1, d_model)
    const Tensor4 q = apply_rope(m.project_q(last), rope, N - 1);                    // (B, H, 1, d_head)
    const Tensor4 right = apply_rope(m.project_k(x), rope), wrong = m.project_k(x);  // (B, H, N, d_head)
    const auto output = [&](const Tensor4& k) {
        return linear(merge_heads(grouped_query_attention(q, k, m.project_v(x))), m.out_proj_weight, m.out_proj_bias);
    };
    CHECK(diff_tokens(output(right), 0, full, N - 1, N) <= 1e-6);
    CHECK(diff_tokens(output(wrong), 0, full, N - 1, N) > 1e-2);
    // The query rotated at the cache's start (0) instead of its own position breaks it too.
    const Tensor4 q0 = apply_rope(m.project_q(last), rope, 0);
    const Tensor3 at_start =
        linear(merge_heads(grouped_query_attention(q0, right, m.project_v(x))), m.out_proj_weight, m.out_proj_bias);
    CHECK(diff_tokens(at_start, 0, full, N - 1, N) > 1e-2);
}

TEST_CASE("several new tokens on a filled cache see the cache and each other causally", "[kv_cache]") {
    Random rng(5);
    const std::size_t B = 2, N = 9, d = 16, H = 4;
    const Tensor3 x = rng.normal<3>({B, N, d});
    const GroupedQueryAttention m = GroupedQueryAttention::random(d, H, 2, false, rng);
    const Tensor3 full = reference_forward(m, x, true);
    KVCache cache(B, 2, d / H, N);
    prefill(m, cache, xt::view(x, xt::all(), xt::range(0, 3), xt::all()));
    const Tensor3 chunk = attend_with_cache(m, cache, xt::view(x, xt::all(), xt::range(3, 7), xt::all()));
    CHECK(diff_tokens(chunk, 0, full, 3, 7) < 1e-5);
    CHECK(cache.length() == 7);
}

TEST_CASE("appending token rows fills the cache as appending (B, H_kv, n, d_head) does", "[kv_cache]") {
    const std::size_t batch = 2, heads = 3, n = 2, d = 4;
    std::vector<float> k(batch * n * heads * d), v(k.size());  // (B, n, H_kv * d_head)
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = float(i), v[i] = -float(i);
    Tensor4 k4 = Tensor4::from_shape({batch, heads, n, d}), v4 = Tensor4::from_shape({batch, heads, n, d});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t t = 0; t < n; ++t)
                for (std::size_t e = 0; e < d; ++e) {
                    k4(b, h, t, e) = float(((b * n + t) * heads + h) * d + e);
                    v4(b, h, t, e) = -k4(b, h, t, e);
                }
    KVCache rows(batch, heads, d, 5), tensors(batch, heads, d, 5);
    rows.append_rows(k.data(), v.data(), n);
    rows.append_rows(k.data(), v.data(), n);  // a second step lands after the first
    tensors.append(k4, v4);
    tensors.append(k4, v4);
    CHECK(rows.length() == 4);
    const bool same_keys = rows.keys() == tensors.keys(), same_values = rows.values() == tensors.values();
    CHECK(same_keys);
    CHECK(same_values);
    CHECK_THROWS_AS(rows.append_rows(k.data(), v.data(), n), usage_error);  // 4 + 2 > 5
}

TEST_CASE("the cache holds what was appended, in order, and refuses to overflow", "[kv_cache]") {
    KVCache cache(2, 2, 3, 4);  // (B, H_kv, capacity, d_head) = (2, 2, 4, 3)
    CHECK(cache.length() == 0);
    CHECK(cache.bytes() == 0);
    Tensor4 k = xt::ones<float>(std::array<std::size_t, 4>{2, 2, 3, 3});
    Tensor4 v = 2.0f * k;
    cache.append(k, v);
    Tensor4 k1 = 5.0f * xt::ones<float>(std::array<std::size_t, 4>{2, 2, 1, 3});
    cache.append(k1, k1);
    REQUIRE(cache.length() == 4);
    const Tensor4 keys = cache.keys(), values = cache.values();
    REQUIRE(keys.shape() == std::array<std::size_t, 4>{2, 2, 4, 3});
    CHECK(keys(1, 1, 0, 2) == 1.0f);  // position 0 is still the first token's (not overwritten)
    CHECK(keys(1, 1, 3, 2) == 5.0f);  // the newest at the end
    CHECK(values(0, 1, 2, 0) == 2.0f);
    CHECK(cache.bytes() == 2u * 2 * 2 * 4 * 3 * 4);  // K and V, B, H_kv, N, d_head, float32
    CHECK(cache.bytes(2) == 2u * 2 * 2 * 4 * 3 * 2);
    CHECK_THROWS_AS(cache.append(k1, k1), usage_error);  // past the capacity
    cache.clear();
    CHECK_THROWS_AS(cache.append(k1, Tensor4(xt::ones<float>(std::array<std::size_t, 4>{2, 2, 2, 3}))),
                    usage_error);  // k, v differ
    CHECK_THROWS_AS(cache.append(Tensor4(xt::ones<float>(std::array<std::size_t, 4>{2, 1, 1, 3})),
                                 Tensor4(xt::ones<float>(std::array<std::size_t, 4>{2, 1, 1, 3}))),
                    usage_error);  // wrong H_kv
    CHECK_THROWS_AS(KVCache(1, 0, 4, 4), usage_error);
    const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
    CHECK_THROWS_AS(KVCache(huge, 4, 4, 4), usage_error);
}

TEST_CASE("prefill needs an empty cache, decode_step one token, and the cache must fit the module", "[kv_cache]") {
    Random rng(8);
    const GroupedQueryAttention m = GroupedQueryAttention::random(16, 4, 2, false, rng);
    const Tensor3 x = rng.normal<3>({1, 3, 16});
    KVCache cache(1, 2, 4, 8);
    CHECK_THROWS_AS(decode_step(m, cache, x), usage_error);
    prefill(m, cache, x);
    CHECK_THROWS_AS(prefill(m, cache, x), usage_error);
    KVCache wrong_heads(1, 4, 4, 8);
    CHECK_THROWS_AS(prefill(m, wrong_heads, x), usage_error);
    KVCache wrong_batch(2, 2, 4, 8);
    CHECK_THROWS_AS(prefill(m, wrong_batch, x), usage_error);
    KVCache short_cache(1, 2, 4, 2);
    CHECK_THROWS_AS(prefill(m, short_cache, x), usage_error);
    CHECK(short_cache.length() == 0);  // refused before anything was appended
    CHECK_THROWS_AS(GroupedQueryAttention::random(16, 4, 3, false, rng), usage_error);
    GroupedQueryAttention bad = m;
    bad.in_proj_weight = Tensor2::from_shape({48, 16});  // the MHA layout, not (16 + 2 * 2 * 4, 16) = (32, 16)
    CHECK_THROWS_AS(bad.validate(), usage_error);
}

TEST_CASE("parameters: W_k and W_v shrink to H_kv * d_head rows", "[kv_cache]") {
    // d_model 512, H 8, d_head 64: MHA 4 * 512^2; GQA with 2 K/V heads: 2 * 512^2 + 2 * 128 * 512.
    CHECK(gqa_params(512, 8, 8, false) == 4u * 512 * 512);
    CHECK(gqa_params(512, 8, 8, true) == 4u * 512 * 512 + 4 * 512);
    CHECK(gqa_params(512, 8, 2, false) == 655360u);
    CHECK(gqa_params(512, 8, 1, false) == 2u * 512 * 512 + 2 * 64 * 512);  // 589824
    CHECK(gqa_params(512, 8, 2, true) == 655360u + 2 * 512 + 2 * 128);
    CHECK_THROWS_AS(gqa_params(512, 8, 3, false), usage_error);
}

TEST_CASE("FLOPs per generated token: linear in N with the cache, quadratic without", "[kv_cache]") {
    // d_model 512, H = H_kv = 8: one token's projections are 2 * 512 * (2 * 512 + 2 * 512) = 2,097,152.
    CHECK(decode_flops(512, 8, 8, 0, true) == 2097152.0 + 4.0 * 512);
    CHECK(decode_flops(512, 8, 8, 0, false) == decode_flops(512, 8, 8, 0, true));  // the first token: same work
    CHECK(decode_flops(512, 8, 8, 511, true) == 2097152.0 + 4.0 * 512 * 512);
    CHECK(decode_flops(512, 8, 8, 511, false) == 512 * 2097152.0 + 4.0 * 512 * (512.0 * 513 / 2));
    // H_kv = 1: K and V projections of 64 rows each: 2 * 512 * (1024 + 128) = 1,179,648.
    CHECK(decode_flops(512, 8, 1, 0, true) == 1179648.0 + 2048.0);
}

TEST_CASE("KV-cache bytes of published models match the hand-computed figures", "[kv_cache]") {
    // layers x H_kv x d_head x 2 (K, V) x 2 bytes (fp16), worked out by hand:
    CHECK(kv_bytes_per_token(model("GPT-2 small")) == 12u * 12 * 64 * 2 * 2);  // 36,864 B = 36 KiB
    CHECK(kv_bytes_per_token(model("GPT-2 small")) == 36 * KiB);
    CHECK(kv_bytes_per_token(model("GPT-2 XL")) == 300 * KiB);     // 48 x 25 x 64 x 4 = 307,200
    CHECK(kv_bytes_per_token(model("Falcon-7B")) == 8 * KiB);      // 32 x 1 x 64 x 4 = 8,192
    CHECK(kv_bytes_per_token(model("Llama-3-8B")) == 131072u);     // 32 x 8 x 128 x 2 x 2 = 128 KiB
    CHECK(kv_bytes_per_token(model("Mistral-7B")) == 128 * KiB);   // the same shape of cache
    CHECK(kv_bytes_per_token(model("Llama-2-70B")) == 320 * KiB);  // 80 x 8 x 128 x 4 = 327,680
    CHECK(kv_bytes_per_token(model("Llama-3-70B")) == 327680u);

    // Contexts: Llama-3-8B at 4k = 512 MiB, 32k = 4 GiB, 128k = 16 GiB.
    const KvModel& llama3 = model("Llama-3-8B");
    CHECK(kv_cache_bytes(llama3, 4096) == 512 * MiB);
    CHECK(kv_cache_bytes(llama3, 32768) == 4 * GiB);
    CHECK(kv_cache_bytes(llama3, 131072) == 16 * GiB);
    CHECK(kv_cache_bytes(llama3, 4096, 8) == 4 * GiB);
    CHECK(caches_that_fit(llama3, 131072, 80 * GiB) == 5);
    CHECK(caches_that_fit(llama3, 131072, 24 * GiB) == 1);
    CHECK(caches_that_fit(llama3, 4096, 24 * GiB) == 48);
    // Llama-2-70B at 128k: 40 GiB, two in 80 GiB and none in 24 GiB.
    CHECK(kv_cache_bytes(model("Llama-2-70B"), 131072) == 40 * GiB);
    CHECK(caches_that_fit(model("Llama-2-70B"), 131072, 80 * GiB) == 2);
    CHECK(caches_that_fit(model("Llama-2-70B"), 131072, 24 * GiB) == 0);
    // GPT-2 XL at 4k: 1200 MiB, so 24 GiB = 24576 MiB holds 20.
    CHECK(kv_cache_bytes(model("GPT-2 XL"), 4096) == 1200 * MiB);
    CHECK(caches_that_fit(model("GPT-2 XL"), 4096, 24 * GiB) == 20);
    // Falcon-7B's one K/V head: 128k tokens in 1 GiB.
    CHECK(kv_cache_bytes(model("Falcon-7B"), 131072) == 1 * GiB);
    CHECK_THROWS_AS(kv_cache_bytes(llama3, std::numeric_limits<std::uint64_t>::max() / 2), usage_error);
}

TEST_CASE("the published configurations are consistent: d_model = H x d_head, H_kv divides H", "[kv_cache]") {
    REQUIRE(kv_models().size() == 7);
    for (const KvModel& m : kv_models()) {
        INFO(m.name);
        CHECK(m.heads * m.d_head == m.d_model);
        CHECK(m.heads % m.kv_heads == 0);
        CHECK(m.bytes_per_element == 2);
        CHECK(m.attention == (m.kv_heads == m.heads ? "MHA" : m.kv_heads == 1 ? "MQA" : "GQA"));
    }
}

TEST_CASE("attend_new_token: one token's raw rows against the cache equal grouped-query attention", "[kv_cache]") {
    Random rng(21);
    const std::size_t B = 2, H = 6, H_kv = 2, d = 48, N = 37;  // d = 48: a pass of three 16-column chunks; N % 4 = 1
    KVCache cache(B, H_kv, d, N + 3);
    const Tensor4 k = rng.normal<4>({B, H_kv, N, d}), v = rng.normal<4>({B, H_kv, N, d});
    cache.append(k, v);
    Tensor4 q = rng.normal<4>({B, H, 1, d});
    for (std::size_t c = 0; c < d; ++c) q(1, 4, 0, c) *= 30.0f;  // one head with large scores: exp must not overflow
    const float scale = 1.0f / std::sqrt(float(d));
    const Tensor4 expected = grouped_query_attention(q, k, v);  // (B, H, 1, d)
    for (std::size_t b = 0; b < B; ++b) {
        std::vector<float> q_rows(H * d), out(H * d);
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t c = 0; c < d; ++c) q_rows[h * d + c] = q(b, h, 0, c);
        attend_new_token(cache, b, q_rows.data(), H, scale, out.data());
        double diff = 0.0;
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t c = 0; c < d; ++c)
                diff = std::max(diff, double(std::fabs(out[h * d + c] - expected(b, h, 0, c))));
        INFO("batch row " << b);
        CHECK(diff <= 1e-4);  // float sums in another order; scores up to ~100 in head 4
        // the heads in two ranges, as two threads would share them: the same rows, bit for bit
        std::vector<float> halves(H * d, -1.0f);
        attend_new_token(cache, b, q_rows.data(), H, scale, halves.data(), 0, 4);
        attend_new_token(cache, b, q_rows.data(), H, scale, halves.data(), 4, H);
        CHECK(halves == out);
    }
    CHECK_THROWS_AS(attend_new_token(KVCache(1, 2, d, 4), 0, q.data(), H, scale, std::vector<float>(H * d).data()),
                    usage_error);  // an empty cache
}
