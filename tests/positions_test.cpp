// tests for headwise/reference/positions.hpp: sinusoids, RoPE in both layouts, ALiBi, attention
// with a bias.
//
// Oracles: values worked out by hand (a rotation by one radian, the slopes of the ALiBi paper's
// code written out as powers of two), properties that hold for any input (a score depends only on
// m - n, the layouts are one permutation apart, rotations keep norms), attention_reference for
// the bias-free case, and tests/fixtures/positions/ (scripts/make-fixtures-positions: Hugging Face's
// Llama rotary embedding and apply_rotary_pos_emb, and a by-hand interleaved reference).
#include "headwise/reference/positions.hpp"

#include "headwise/base/random.hpp"
#include "headwise/io/npy.hpp"
#include "headwise/reference/attention.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <array>
#include <cmath>
#include <fstream>
#include <numeric>

using namespace headwise;

namespace {

// Token t's dot product of head 0: q (1, 1, N, d) row m with k row n.
double dot(const Tensor4& q, std::size_t m, const Tensor4& k, std::size_t n) {
    return xt::sum(xt::cast<double>(xt::view(q, 0, 0, m)) * xt::cast<double>(xt::view(k, 0, 0, n)))();
}

// One (1, 1, 1, d) vector repeated at N positions: (1, 1, N, d).
Tensor4 repeated(const Tensor4& one, std::size_t n) {
    return xt::broadcast(xt::view(one, xt::range(0, 1), xt::range(0, 1), xt::range(0, 1), xt::all()),
                         std::array<std::size_t, 4>{1, 1, n, one.shape()[3]});
}

}  // namespace

TEST_CASE("the sinusoidal table holds sin and cos of position x base^(-2i/d_model)", "[positions]") {
    const Tensor2 pe = sinusoidal_table(5, 4);  // (N, d_model) = (5, 4): w_0 = 1, w_1 = 10000^(-1/2) = 0.01
    CHECK(pe(0, 0) == 0.0f);
    CHECK(pe(0, 1) == 1.0f);
    CHECK(pe(3, 0) == Approx(std::sin(3.0)).margin(1e-7));
    CHECK(pe(3, 1) == Approx(std::cos(3.0)).margin(1e-7));
    CHECK(pe(4, 2) == Approx(std::sin(0.04)).margin(1e-7));
    CHECK(pe(4, 3) == Approx(std::cos(0.04)).margin(1e-7));
    const Tensor2 later = sinusoidal_table(2, 4, 10000.0, 3);  // rows 3 and 4
    CHECK(max_abs_diff(later, xt::eval(xt::view(pe, xt::range(3, 5), xt::all()))) == 0.0);
    CHECK_THROWS_AS(sinusoidal_table(4, 7), usage_error);
}

TEST_CASE("two sinusoidal encodings' dot product depends only on their distance", "[positions]") {
    const Tensor2 pe = sinusoidal_table(64, 32);
    // sum_i sin(a)sin(b) + cos(a)cos(b) = sum_i cos(w_i (a - b))
    for (std::size_t k : {1u, 5u, 17u}) {
        const double first = xt::sum(xt::view(pe, 0) * xt::view(pe, k))();
        for (std::size_t p : {3u, 20u, 40u}) {
            const double at_p = xt::sum(xt::view(pe, p) * xt::view(pe, p + k))();
            CHECK(at_p == Approx(first).margin(1e-5));
        }
    }
}

TEST_CASE("RoPE rotates pair i by position x base^(-2i/d_head): one radian on a worked example", "[positions]") {
    // d_head = 4, base 100: theta_0 = 1, theta_1 = 100^(-1/2) = 0.1. Position 1.
    const std::vector<double> theta = rope_frequencies(4, 100.0);
    REQUIRE(theta.size() == 2);
    CHECK(theta[0] == 1.0);
    CHECK(theta[1] == Approx(0.1).epsilon(1e-12));
    const Tensor4 x = {{{{1.0f, 2.0f, 0.0f, 3.0f}}}};  // (1, 1, 1, 4)
    const double c0 = std::cos(1.0), s0 = std::sin(1.0), c1 = std::cos(0.1), s1 = std::sin(0.1);
    // half: pairs (0, 2) and (1, 3)
    const Tensor4 half = apply_rope(x, Rope{100.0, RopeLayout::half}, 1);
    CHECK(half(0, 0, 0, 0) == Approx(1.0 * c0 - 0.0 * s0).margin(1e-7));
    CHECK(half(0, 0, 0, 2) == Approx(0.0 * c0 + 1.0 * s0).margin(1e-7));
    CHECK(half(0, 0, 0, 1) == Approx(2.0 * c1 - 3.0 * s1).margin(1e-7));
    CHECK(half(0, 0, 0, 3) == Approx(3.0 * c1 + 2.0 * s1).margin(1e-7));
    // interleaved: pairs (0, 1) and (2, 3)
    const Tensor4 inter = apply_rope(x, Rope{100.0, RopeLayout::interleaved}, 1);
    CHECK(inter(0, 0, 0, 0) == Approx(1.0 * c0 - 2.0 * s0).margin(1e-7));
    CHECK(inter(0, 0, 0, 1) == Approx(2.0 * c0 + 1.0 * s0).margin(1e-7));
    CHECK(inter(0, 0, 0, 2) == Approx(0.0 * c1 - 3.0 * s1).margin(1e-7));
    CHECK(inter(0, 0, 0, 3) == Approx(3.0 * c1 + 0.0 * s1).margin(1e-7));
    // Position 0 is the identity.
    CHECK(max_abs_diff(apply_rope(x, Rope{}, 0), x) == 0.0);
}

TEST_CASE("RoPE angles computed once rotate token rows in place as apply_rope rotates a tensor", "[positions]") {
    // (N, H * d_head) rows, as a projection writes them: N = 2 tokens, H = 3 heads, d_head = 4
    const std::size_t n = 2, heads = 3, d = 4;
    std::vector<float> rows(n * heads * d);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = 0.25f * float(i) - 2.0f;
    Tensor4 x = Tensor4::from_shape({1, heads, n, d});  // the same numbers as (B, H, N, d_head)
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t e = 0; e < d; ++e) x(0, h, t, e) = rows[t * heads * d + h * d + e];
    const Rope rope{100.0, RopeLayout::interleaved};
    const std::vector<double> positions{5.0, 6.0};
    const RopeAngles angles = rope_angles(rope, d, positions);
    REQUIRE(angles.pairs == 2);
    CHECK(angles.cos[1 * 2 + 1] == Approx(std::cos(6.0 * 0.1)).epsilon(1e-12));  // token 1, pair 1
    rotate_in_place({rows.data(), n * heads * d, d, heads * d}, {1, heads, n, d}, rope.layout, angles);
    const Tensor4 expected = apply_rope(x, rope, 5);
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t e = 0; e < d; ++e) CHECK(rows[t * heads * d + h * d + e] == expected(0, h, t, e));
    // angles for two tokens do not rotate three
    CHECK_THROWS_AS(rotate_in_place({rows.data(), 0, d, heads * d}, {1, 1, 3, d}, rope.layout, angles),
                    std::invalid_argument);
}

TEST_CASE("RoPE keeps the norm of every vector it rotates", "[positions]") {
    Random rng(3);
    const Tensor4 x = rng.normal<4>({2, 3, 9, 16});
    const Tensor4 y = apply_rope(x, Rope{}, 7);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 3; ++h)
            for (std::size_t t = 0; t < 9; ++t) {
                const double nx = xt::sum(xt::square(xt::view(x, b, h, t)))();
                const double ny = xt::sum(xt::square(xt::view(y, b, h, t)))();
                CHECK(ny == Approx(nx).epsilon(1e-5));
            }
}

TEST_CASE("with RoPE the score q_m . k_n depends only on m - n", "[positions]") {
    Random rng(11);
    const Tensor4 q1 = rng.normal<4>({1, 1, 1, 64}), k1 = rng.normal<4>({1, 1, 1, 64});
    for (const RopeLayout layout : {RopeLayout::half, RopeLayout::interleaved}) {
        const Rope rope{10000.0, layout};
        const std::size_t n = 40;
        const Tensor4 q = apply_rope(repeated(q1, n), rope), k = apply_rope(repeated(k1, n), rope);
        // Shift both positions by t: the same score, to float rounding.
        double worst = 0.0;
        for (std::size_t m = 0; m < 20; ++m)
            for (std::size_t p = 0; p < 20; ++p)
                for (std::size_t t : {1u, 7u, 19u})
                    worst = std::max(worst, std::abs(dot(q, m + t, k, p + t) - dot(q, m, k, p)));
        CHECK(worst < 2e-5);  // scores of order 8 (|q||k| ~ 64): a few float roundings
        // ...and the score does change with the distance.
        CHECK(std::abs(dot(q, 5, k, 0) - dot(q, 0, k, 0)) > 0.1);
    }
}

TEST_CASE("the half and interleaved layouts are the same rotation up to a permutation of dimensions", "[positions]") {
    Random rng(5);
    const Tensor4 x = rng.normal<4>({2, 2, 6, 8});
    const std::vector<std::size_t> perm = half_to_interleaved(8);
    CHECK(perm == std::vector<std::size_t>{0, 4, 1, 5, 2, 6, 3, 7});
    const Tensor4 half = apply_rope(x, Rope{10000.0, RopeLayout::half}, 3);
    const Tensor4 inter = apply_rope(permute_dims(x, perm), Rope{10000.0, RopeLayout::interleaved}, 3);
    CHECK(max_abs_diff(permute_dims(half, perm), inter) == 0.0);
    // But applying the other layout to the same vectors is a different function.
    CHECK(max_abs_diff(apply_rope(x, Rope{10000.0, RopeLayout::interleaved}, 3), half) > 0.1);
}

TEST_CASE("position interpolation: scale s at position p is position s p", "[positions]") {
    Random rng(8);
    const Tensor4 x = rng.normal<4>({1, 2, 5, 16});
    const std::vector<double> doubled = {0.0, 2.0, 4.0, 6.0, 8.0};
    CHECK(max_abs_diff(apply_rope(x, Rope{10000.0, RopeLayout::half, 0.5}, doubled), apply_rope(x, Rope{}, 0)) < 1e-6);
    CHECK(max_abs_diff(apply_rope(x, Rope{}, doubled), apply_rope(x, Rope{}, 0)) > 0.1);
}

TEST_CASE("RoPE refuses an odd d_head, a base not above 1 and a scale not above 0", "[positions]") {
    const Tensor4 odd = Tensor4::from_shape({1, 1, 2, 5});
    CHECK_THROWS_WITH(apply_rope(odd, Rope{}, 0), Catch::Contains("d_head must be even, got 5"));
    const Tensor4 x = xt::zeros<float>(std::array<std::size_t, 4>{1, 1, 2, 4});
    CHECK_THROWS_WITH(apply_rope(x, Rope{-5.0}, 0), Catch::Contains("base must be a finite number > 1"));
    CHECK_THROWS_WITH(apply_rope(x, Rope{0.0}, 0), Catch::Contains("got 0"));
    CHECK_THROWS_WITH(apply_rope(x, Rope{10000.0, RopeLayout::half, 0.0}, 0), Catch::Contains("scale must be > 0"));
}

TEST_CASE("ALiBi slopes: 2^(-8h/H) for H a power of two, the paper's rule otherwise", "[positions]") {
    const auto powers = [](std::initializer_list<double> exponents) {
        std::vector<double> s;
        for (const double e : exponents) s.push_back(std::exp2(-e));
        return s;
    };
    const auto check = [](const std::vector<double>& got, const std::vector<double>& want) {
        REQUIRE(got.size() == want.size());
        for (std::size_t h = 0; h < got.size(); ++h) CHECK(got[h] == Approx(want[h]).epsilon(1e-12));
    };
    check(alibi_slopes(8), powers({1, 2, 3, 4, 5, 6, 7, 8}));  // 1/2 .. 1/256, as in the paper
    check(alibi_slopes(16), powers({0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8}));
    // H = 12: the 8 slopes of H = 8, then slopes 1, 3, 5, 7 of H = 16 (2^-0.5, 2^-1.5, ...).
    check(alibi_slopes(12), powers({1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5}));
    // H = 6: the 4 slopes of H = 4 (2^-2, 2^-4, ...), then slopes 1 and 3 of H = 8.
    check(alibi_slopes(6), powers({2, 4, 6, 8, 1, 3}));
    check(alibi_slopes(1), powers({8}));
    CHECK_THROWS_AS(alibi_slopes(0), usage_error);
}

TEST_CASE("the ALiBi bias is -slope x distance, zero on the diagonal", "[positions]") {
    const Tensor3 bias = alibi_bias(2, 3, 3);  // slopes 2^-4, 2^-8
    CHECK(bias(0, 0, 0) == 0.0f);
    CHECK(bias(0, 2, 0) == Approx(-2.0 / 16.0));
    CHECK(bias(1, 2, 1) == Approx(-1.0 / 256.0));
    CHECK(bias(0, 0, 2) == Approx(-2.0 / 16.0));    // above the diagonal (not causal): |i - j|
    const Tensor3 decode = alibi_bias(2, 1, 5, 4);  // the query at position 4 over keys 0..4
    CHECK(decode(0, 0, 4) == 0.0f);
    CHECK(decode(0, 0, 0) == Approx(-4.0 / 16.0));
}

TEST_CASE("attention with a bias: none equals the reference; a per-row constant changes nothing", "[positions]") {
    Random rng(21);
    const Tensor4 q = rng.normal<4>({2, 4, 5, 8}), k = rng.normal<4>({2, 2, 5, 8}), v = rng.normal<4>({2, 2, 5, 8});
    AttentionOptions causal;
    causal.causal = true;
    // K/V heads repeated by hand: head h reads h / 2.
    Tensor4 k4 = Tensor4::from_shape({2, 4, 5, 8}), v4 = k4;
    for (std::size_t h = 0; h < 4; ++h) {
        xt::view(k4, xt::all(), h) = xt::view(k, xt::all(), h / 2);
        xt::view(v4, xt::all(), h) = xt::view(v, xt::all(), h / 2);
    }
    const Tensor4 plain = attention_with_bias(q, k, v, nullptr, causal);
    CHECK(max_abs_diff(plain, attention_reference(q, k4, v4, causal)) < 1e-6);
    Tensor3 shift = Tensor3::from_shape({4, 5, 5});
    for (std::size_t h = 0; h < 4; ++h)
        for (std::size_t i = 0; i < 5; ++i) xt::view(shift, h, i) = float(h) - 2.5f * float(i);
    CHECK(max_abs_diff(attention_with_bias(q, k, v, &shift, causal), plain) < 1e-6);
    // ALiBi's bias does change it, towards near keys.
    const Tensor3 bias = alibi_bias(4, 5, 5);
    CHECK(max_abs_diff(attention_with_bias(q, k, v, &bias, causal), plain) > 1e-3);
}

TEST_CASE("ALiBi weights worked by hand: equal scores, one query over two keys", "[positions]") {
    // q . k = 0 for both keys: the weights are softmax(-slope (1, 0)) = (1, e^s) / (1 + e^s).
    const Tensor4 q = xt::zeros<float>(std::array<std::size_t, 4>{1, 1, 2, 2});
    Tensor4 k = q, v = {{{{1.0f, 0.0f}, {0.0f, 1.0f}}}};
    const Tensor3 bias = alibi_bias(1, 2, 2);  // slope 2^-8
    AttentionOptions causal;
    causal.causal = true;
    Tensor4 w;
    attention_with_bias(q, k, v, &bias, causal, &w);
    const double s = 1.0 / 256.0;
    CHECK(w(0, 0, 0, 0) == 1.0f);
    CHECK(w(0, 0, 1, 0) == Approx(1.0 / (1.0 + std::exp(s))).epsilon(1e-6));
    CHECK(w(0, 0, 1, 1) == Approx(std::exp(s) / (1.0 + std::exp(s))).epsilon(1e-6));
}

// ---------------------------------------------------------------------------------------------
// Parity with PyTorch / transformers (tests/fixtures/positions, scripts/make-fixtures-positions).

namespace {

const std::filesystem::path fixtures = std::filesystem::path(HEADWISE_FIXTURES_DIR) / "positions";

nlohmann::json positions_manifest() {
    std::ifstream in(fixtures / "manifest.json");
    return nlohmann::json::parse(in);
}

Tensor4 load4(const std::filesystem::path& file) { return npy::to_tensor<4>(npy::read(file), file.string()); }

}  // namespace

TEST_CASE("RoPE matches Llama's apply_rotary_pos_emb (half) and the complex-product reference (interleaved)",
          "[positions][fixtures]") {
    const auto cases = positions_manifest().at("rope_cases");
    REQUIRE(cases.size() >= 5);
    double worst = 0.0;
    for (const auto& c : cases) {
        const std::filesystem::path dir = fixtures / c.at("name").get<std::string>();
        INFO("case " << c.at("name").get<std::string>());
        const Tensor4 q = load4(dir / "q.npy"), k = load4(dir / "k.npy");  // (B, H, N, d_head)
        const std::size_t first = c.at("first_position").get<std::size_t>();
        // The fixture tells the layouts apart: a layout mix-up could not pass.
        CHECK(max_abs_diff(load4(dir / "q_half.npy"), load4(dir / "q_interleaved.npy")) > 0.1);
        for (const RopeLayout layout : {RopeLayout::half, RopeLayout::interleaved}) {
            const Rope rope{c.at("base").get<double>(), layout, c.at("position_scale").get<double>()};
            const std::string suffix = std::string(layout_name(layout)) + ".npy";
            const double dq = max_abs_diff(apply_rope(q, rope, first), load4(dir / ("q_" + suffix)));
            const double dk = max_abs_diff(apply_rope(k, rope, first), load4(dir / ("k_" + suffix)));
            CHECK(dq <= 1e-6);
            CHECK(dk <= 1e-6);
            worst = std::max({worst, dq, dk});
        }
    }
    WARN("largest difference from the PyTorch RoPE fixtures: " << worst);
}

TEST_CASE("ALiBi slopes match the ALiBi paper's rule as the fixture script computes it", "[positions][fixtures]") {
    const auto slopes = positions_manifest().at("alibi_slopes");
    REQUIRE(slopes.size() == 4);
    for (const auto& [heads, expected] : slopes.items()) {
        INFO("H = " << heads);
        const std::vector<double> got = alibi_slopes(std::stoul(heads));
        REQUIRE(got.size() == expected.size());
        for (std::size_t h = 0; h < got.size(); ++h) CHECK(got[h] == Approx(expected[h].get<double>()).epsilon(1e-12));
    }
}
