// tests for headwise/reference/layer.hpp: grouped-query attention and its module.
//
// Oracles: attention_reference (double precision, plain loops) on K/V repeated by the hand-checked
// repeat_kv; MultiHeadAttention::forward on the equivalent multi-head module, its weights laid out
// as checked by hand; torch.repeat_interleave's documented order.
#include "headwise/reference/layer.hpp"

#include "gqa_reference.hpp"

#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

using namespace headwise;

TEST_CASE("query_group is H / H_kv and refuses an H_kv that does not divide H", "[layer]") {
    CHECK(query_group(8, 8) == 1);
    CHECK(query_group(8, 2) == 4);
    CHECK(query_group(8, 1) == 8);
    CHECK_THROWS_AS(query_group(8, 3), usage_error);
    CHECK_THROWS_AS(query_group(8, 0), usage_error);
    CHECK_THROWS_AS(query_group(0, 1), usage_error);
    CHECK_THROWS_AS(query_group(2, 4), usage_error);
    // Query heads 0..3 read K/V head 0 and 4..7 read head 1 (groups of neighbours, not h % H_kv).
    for (std::size_t h = 0; h < 8; ++h) CHECK(kv_head_of(h, 4) == h / 4);
    CHECK(kv_head_of(5, 4) == 1);
    CHECK(kv_head_of(3, 4) == 0);
}

TEST_CASE("repeat_kv repeats each head in place, like torch.repeat_interleave over dim 1", "[layer]") {
    Tensor4 kv = Tensor4::from_shape({2, 2, 3, 2});  // (B, H_kv, N, d_head), value = 10 * b + head
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 2; ++h) xt::view(kv, b, h) = float(10 * b + h);
    const Tensor4 r = repeat_kv(kv, 3);  // (2, 6, 3, 2): heads 0 0 0 1 1 1
    REQUIRE(r.shape() == std::array<std::size_t, 4>{2, 6, 3, 2});
    const float expected_head[] = {0, 0, 0, 1, 1, 1};
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 6; ++h)
            for (std::size_t n = 0; n < 3; ++n) CHECK(r(b, h, n, 1) == 10.0f * b + expected_head[h]);
}

TEST_CASE("grouped-query attention equals the reference on K/V repeated per group", "[layer]") {
    Random rng(3);
    const std::size_t B = 2, H = 8, nq = 5, nk = 7, dh = 4;
    const Tensor4 q = rng.normal<4>({B, H, nq, dh});
    for (std::size_t kv_heads : {1u, 2u, 4u, 8u}) {
        const Tensor4 k = rng.normal<4>({B, kv_heads, nk, dh});
        const Tensor4 v = rng.normal<4>({B, kv_heads, nk, dh});
        const std::size_t g = H / kv_heads;
        Mask2 padding = Mask2::from_shape({B, nk});
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t j = 0; j < nk; ++j) padding(b, j) = b == 1 && j >= 5;
        for (int variant = 0; variant < 3; ++variant) {
            AttentionOptions o;
            o.causal = variant == 1;
            o.key_padding_mask = variant == 2 ? &padding : nullptr;
            Tensor4 w_expected, w;
            const Tensor4 expected = attention_reference(q, repeat_kv(k, g), repeat_kv(v, g), o, &w_expected);
            INFO("H_kv = " << kv_heads << ", variant " << variant);
            CHECK(max_abs_diff(grouped_query_attention(q, k, v, o), expected) < 1e-5);
            CHECK(max_abs_diff(grouped_query_attention(q, k, v, o, &w), expected) < 1e-5);
            CHECK(max_abs_diff(w, w_expected) < 1e-6);
        }
    }
    CHECK_THROWS_AS(grouped_query_attention(q, rng.normal<4>({B, 3, nk, dh}), rng.normal<4>({B, 3, nk, dh})),
                    usage_error);
    CHECK_THROWS_AS(grouped_query_attention(q, rng.normal<4>({B, 2, nk, dh}), rng.normal<4>({B, 2, nk + 1, dh})),
                    usage_error);
}

TEST_CASE("a GQA module equals the multi-head module with its K/V weights repeated per group", "[layer]") {
    Random rng(11);
    const std::size_t d = 32, H = 4;
    const Tensor3 x = rng.normal<3>({2, 6, d});
    for (std::size_t kv_heads : {1u, 2u, 4u}) {
        const GroupedQueryAttention gqa = GroupedQueryAttention::random(d, H, kv_heads, /*bias=*/true, rng);
        REQUIRE(gqa.in_proj_weight.shape() == std::array<std::size_t, 2>{d + 2 * kv_heads * 8, d});
        const MultiHeadAttention mha = gqa.with_repeated_kv();
        // Hand check of the layout: row r of head h's W_k block is row r of K/V head h / group.
        const std::size_t g = H / kv_heads;
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t r = 0; r < 8; ++r) {
                CHECK(mha.in_proj_weight(d + h * 8 + r, 3) == gqa.in_proj_weight(d + (h / g) * 8 + r, 3));
                CHECK(mha.in_proj_weight(2 * d + h * 8 + r, 5) ==
                      gqa.in_proj_weight(d + kv_heads * 8 + (h / g) * 8 + r, 5));
                CHECK(mha.in_proj_bias(2 * d + h * 8 + r) == gqa.in_proj_bias(d + kv_heads * 8 + (h / g) * 8 + r));
            }
        AttentionOptions causal;
        causal.causal = true;
        INFO("H_kv = " << kv_heads);
        CHECK(max_abs_diff(gqa.forward(x), mha.forward(x)) < 1e-5);
        CHECK(max_abs_diff(gqa.forward(x, causal), mha.forward(x, causal)) < 1e-5);
        CHECK(max_abs_diff(gqa.forward(x, causal), reference_forward(gqa, x, true)) < 1e-5);
    }
    // H_kv = H is multi-head attention itself.
    const MultiHeadAttention mha = MultiHeadAttention::random(d, H, true, rng);
    CHECK(max_abs_diff(GroupedQueryAttention::from_multi_head(mha).forward(x), mha.forward(x)) < 1e-5);
}
