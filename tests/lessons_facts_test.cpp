// The facts lessons 02-04 print, checked against hand-worked values or against an independent
// path (the double-precision reference), never against the lesson's own numbers.
#include "headwise/reference/attention.hpp"
#include "headwise/reference/batched.hpp"
#include "headwise/reference/params.hpp"
#include "headwise/reference/softmax.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

using namespace headwise;

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

bool bit_identical(const Tensor3& a, const Tensor3& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// (1, 1, n, n) scores, all equal to `value`.
Tensor4 equal_scores(std::size_t n, float value) {
    Tensor4 s = Tensor4::from_shape({1, 1, n, n});
    s.fill(value);
    return s;
}

MultiHeadAttention random_module(std::size_t d, std::size_t heads, bool bias, std::uint64_t seed) {
    Random rng(seed);
    return MultiHeadAttention::random(d, heads, bias, rng);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Lesson 02: split and merge

TEST_CASE("lesson 02: the straight reshape gives head 0 token 0's features 8..15 where split gives token 1's 0..7",
          "[lessons][split]") {
    Tensor3 x = Tensor3::from_shape({1, 5, 64});  // x(0, n, c) = 100 n + c, so every value names its origin
    for (std::size_t n = 0; n < 5; ++n)
        for (std::size_t c = 0; c < 64; ++c) x(0, n, c) = static_cast<float>(100 * n + c);
    const Tensor4 split = split_heads(x, 8);                                               // (1, 8, 5, 8)
    const Tensor4 straight = xt::reshape_view(x, std::array<std::size_t, 4>{1, 8, 5, 8});  // (1, 8, 5, 8)
    for (std::size_t c = 0; c < 8; ++c) {
        CHECK(split(0, 0, 1, c) == 100.0f + c);       // head 0, row 1 = token 1, features 0..7
        CHECK(straight(0, 0, 1, c) == 8.0f + c);      // head 0, row 1 = token 0, features 8..15
        CHECK(split(0, 3, 4, c) == 400.0f + 24 + c);  // head 3, row 4 = token 4, features 24..31
    }
    // Both round-trip exactly, which is why a round-trip test cannot tell them apart.
    CHECK(bit_identical(merge_heads(split), x));
    CHECK(bit_identical(Tensor3(xt::reshape_view(straight, std::array<std::size_t, 3>{1, 5, 64})), x));
}

TEST_CASE("lesson 02: head h of the split projection is x projected with rows h*d_head.. of w_q", "[lessons][split]") {
    Random rng(4);
    const Tensor3 x = rng.normal<3>({2, 5, 64});
    const Tensor2 w_q = rng.linear_weight(64, 64);
    const Tensor4 q = split_heads(linear(x, w_q), 8);  // (2, 8, 5, 8)
    for (std::size_t h = 0; h < 8; ++h) {
        const Tensor2 rows = xt::view(w_q, xt::range(8 * h, 8 * h + 8), xt::all());  // (8, 64)
        const Tensor3 q_h = linear(x, rows);                                         // (2, 5, 8)
        CHECK(max_abs_diff(q_h, Tensor3(xt::view(q, xt::all(), h))) < 1e-6);
    }
}

// ---------------------------------------------------------------------------------------------
// Lesson 03: multi-head attention

TEST_CASE("lesson 03: a loop over per-head weights, the batched form and one fused QKV projection agree",
          "[lessons][multi_head]") {
    const auto mha = random_module(32, 4, true, 6);  // d_head = 8
    Random rng(7);
    const Tensor3 x = rng.normal<3>({2, 6, 32});
    const Tensor3 batched = mha.forward(x);

    // (a) loop over heads with separate small weights, each head through the double-precision reference
    const auto p = params::split_per_head(mha);
    Tensor3 concat = Tensor3::from_shape({2, 6, 32});
    for (std::size_t h = 0; h < 4; ++h) {
        auto one = [](const Tensor3& t) { return Tensor4(xt::expand_dims(t, 1)); };  // (B, 1, N, d_head)
        const Tensor4 head = attention_reference(one(linear(x, p.w_q[h], p.b_q[h])), one(linear(x, p.w_k[h], p.b_k[h])),
                                                 one(linear(x, p.w_v[h], p.b_v[h])));
        xt::view(concat, xt::all(), xt::all(), xt::range(8 * h, 8 * h + 8)) = xt::view(head, xt::all(), 0);
    }
    const Tensor3 looped = linear(concat, p.w_o, p.b_o);
    CHECK(max_abs_diff(looped, batched) < 1e-5);

    // (c) one projection to 3 * d_model features, then cut into thirds
    const Tensor3 qkv = linear(x, mha.in_proj_weight, mha.in_proj_bias);  // (2, 6, 96)
    auto third = [&](std::size_t i) {
        return split_heads(Tensor3(xt::view(qkv, xt::all(), xt::all(), xt::range(32 * i, 32 * i + 32))), 4);
    };
    const Tensor3 fused =
        linear(merge_heads(attention_reference(third(0), third(1), third(2))), mha.out_proj_weight, mha.out_proj_bias);
    CHECK(max_abs_diff(fused, batched) < 1e-5);
}

TEST_CASE("lesson 03: silencing one head moves d_head output features without W_O and all of them with it",
          "[lessons][multi_head]") {
    auto mha = random_module(32, 4, false, 8);
    Random rng(9);
    const Tensor3 x = rng.normal<3>({1, 5, 32});
    auto silenced = mha;  // head 1's values are all zero, so its output is zero
    xt::view(silenced.in_proj_weight, xt::range(64 + 8, 64 + 16), xt::all()) = 0.0f;
    auto changed = [](const Tensor3& a, const Tensor3& b) {
        std::vector<std::size_t> out;
        for (std::size_t c = 0; c < a.shape()[2]; ++c)
            if (max_abs_diff(Tensor2(xt::view(a, xt::all(), xt::all(), c)),
                             Tensor2(xt::view(b, xt::all(), xt::all(), c))) > 0)
                out.push_back(c);
        return out;
    };
    CHECK(changed(mha.forward(x), silenced.forward(x)).size() == 32);  // W_O spreads head 1 everywhere
    mha.out_proj_weight = xt::eye<float>(32);
    silenced.out_proj_weight = mha.out_proj_weight;
    CHECK(changed(mha.forward(x), silenced.forward(x)) == std::vector<std::size_t>{8, 9, 10, 11, 12, 13, 14, 15});
}

TEST_CASE("lesson 03: scaling by 1/sqrt(d_model) instead of 1/sqrt(d_head) flattens every row",
          "[lessons][multi_head]") {
    // softmax(beta * s) has entropy that falls as beta grows, so the smaller scale can only flatten.
    Random rng(10);
    const Tensor4 q = rng.normal<4>({2, 8, 5, 8});
    const Tensor4 k = rng.normal<4>({2, 8, 5, 8});
    const auto sharp = row_entropy(softmax(attention_scores(q, k, 1.0f / std::sqrt(8.0f))));  // d_head = 8
    const auto flat = row_entropy(softmax(attention_scores(q, k, 1.0f / std::sqrt(64.0f))));  // d_model = 64
    for (std::size_t i = 0; i < sharp.size(); ++i) {
        CHECK(flat.data()[i] >= sharp.data()[i] - 1e-6f);
        CHECK(flat.data()[i] <= std::log(5.0f) + 1e-6f);
    }
}

// ---------------------------------------------------------------------------------------------
// Lesson 04: the causal mask

TEST_CASE("lesson 04: an additive -inf mask and a boolean mask give bit-identical weights", "[lessons][causal]") {
    Random rng(11);
    const Tensor4 q = rng.normal<4>({2, 3, 6, 4});
    const Tensor4 k = rng.normal<4>({2, 3, 6, 4});
    const Tensor4 scores = attention_scores(q, k, 0.5f);
    const Mask2 mask = causal_mask(6);
    const Tensor2 additive = xt::where(mask, neg_inf, 0.0f);
    const Tensor4 w_add = softmax(Tensor4(scores + additive));
    const Tensor4 w_bool = softmax(Tensor4(xt::where(xt::broadcast(mask, scores.shape()), neg_inf, scores)));
    CHECK(std::memcmp(w_add.data(), w_bool.data(), w_add.size() * sizeof(float)) == 0);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 3; ++h) {
            CHECK(w_add(b, h, 0, 0) == 1.0f);  // row 0 sees only itself
            for (std::size_t i = 0; i < 6; ++i)
                for (std::size_t j = i + 1; j < 6; ++j) CHECK(w_add(b, h, i, j) == 0.0f);
        }
}

TEST_CASE("lesson 04: changing token j leaves the causal outputs before j bit-identical", "[lessons][causal]") {
    const auto mha = random_module(16, 2, true, 12);
    Random rng(13);
    const Tensor3 x = rng.normal<3>({2, 6, 16});
    Tensor3 x2 = x;
    xt::view(x2, xt::all(), 3) = rng.normal<2>({2, 16});  // change token 3
    AttentionOptions causal;
    causal.causal = true;
    const Tensor3 y = mha.forward(x, causal), y2 = mha.forward(x2, causal);
    for (std::size_t n = 0; n < 6; ++n) {
        const Tensor3 a = xt::view(y, xt::all(), xt::range(n, n + 1)), b = xt::view(y2, xt::all(), xt::range(n, n + 1));
        if (n < 3)
            CHECK(bit_identical(a, b));
        else
            CHECK(max_abs_diff(a, b) > 1e-4);
    }
}

TEST_CASE("lesson 04: masking after softmax leaves rows summing to 1/3, 2/3, 1", "[lessons][causal]") {
    const Tensor4 w = softmax(equal_scores(3, 0.0f));  // every weight 1/3
    const Mask2 mask = causal_mask(3);
    for (std::size_t i = 0; i < 3; ++i) {
        double sum = 0.0;
        for (std::size_t j = 0; j < 3; ++j) sum += mask(i, j) ? 0.0 : w(0, 0, i, j);
        CHECK(sum == Approx((i + 1) / 3.0));
    }
}

TEST_CASE("lesson 04: filling hidden scores with 0 instead of -inf gives them weight", "[lessons][causal]") {
    // All scores 0: filling the hidden ones with 0 changes nothing, so row 0 still spreads 1/3 to each
    // key and gives 2/3 of its weight to the two keys it must not see.
    const Mask2 mask = causal_mask(3);
    const Tensor4 s = equal_scores(3, 0.0f);
    const Tensor4 w = softmax(Tensor4(xt::where(xt::broadcast(mask, s.shape()), 0.0f, s)));
    CHECK(w(0, 0, 0, 1) + w(0, 0, 0, 2) == Approx(2.0 / 3.0));
}

TEST_CASE("lesson 04: a (B, N) padding mask passed as the (N, N) attention mask is refused", "[lessons][causal]") {
    Random rng(14);
    const Tensor4 q = rng.normal<4>({2, 1, 5, 4});
    Mask2 wrong = Mask2::from_shape({2, 5});
    wrong.fill(false);
    AttentionOptions o;
    o.attn_mask = &wrong;
    CHECK_THROWS_AS(scaled_dot_product_attention(q, q, q, o), usage_error);
}
