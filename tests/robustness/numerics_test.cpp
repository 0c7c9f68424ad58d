// Numerics at the edges: logits of +-1e4, d_head up to 256, rows whose keys are all masked, and
// float32 against double precision at every lesson's default sizes.
//
// The oracles: closed forms worked out by hand (scores chosen so softmax has a known answer),
// and attention_reference (plain loops in double precision, src/headwise/reference/attention.cpp).
// The stated tolerance for float32 against the double reference on N(0, 1) inputs is
// tests/cuda/tolerance.hpp's: |out - ref| <= 1e-5 + 1e-4 |ref| for every element.
#include "headwise/reference/attention.hpp"
#include "headwise/base/random.hpp"
#include "headwise/reference/softmax.hpp"
#include "kernels/attention_kernels.hpp"
#include "cuda/tolerance.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

using namespace headwise;

namespace {

bool all_finite(const float* p, std::size_t n) {
    return std::all_of(p, p + n, [](float x) { return std::isfinite(x); });
}
template <class T>
bool all_finite(const T& t) {
    return all_finite(t.data(), t.size());
}

double excess(const Tensor4& out, const Tensor4& ref) {
    REQUIRE(out.shape() == ref.shape());
    return test::excess_error(out.data(), ref.data(), out.size());
}

// The three logits every edge case below uses, and softmax of them worked out by hand:
// exp(1e4 - 1e4) = 1, exp(1e4 - 1 - 1e4) = e^-1, exp(-1e4 - 1e4) = 0 (underflows, correctly).
constexpr float big = 1e4f;
const double p0 = 1.0 / (1.0 + std::exp(-1.0)), p1 = std::exp(-1.0) / (1.0 + std::exp(-1.0));

// One query attending to three keys with scores exactly (1e4, 1e4 - 1, -1e4), at d_head 256:
// q = e_0, k_j = 16 s_j e_0 (16 = sqrt(256) undoes the scaling; powers of two are exact in
// float), v_j = e_(j+1). The output is then the weights themselves, in dimensions 1..3.
struct ThreeKeys {
    static constexpr std::size_t d_head = 256;
    Tensor4 q = Tensor4::from_shape({1, 1, 1, d_head});  // (B, H, N_q, d_head)
    Tensor4 k = Tensor4::from_shape({1, 1, 3, d_head});  // (B, H, N_k, d_head)
    Tensor4 v = Tensor4::from_shape({1, 1, 3, d_head});  // (B, H, N_k, d_head)
    ThreeKeys() {
        q.fill(0.0f);
        k.fill(0.0f);
        v.fill(0.0f);
        q(0, 0, 0, 0) = 1.0f;
        const float s[3] = {big, big - 1.0f, -big};
        for (std::size_t j = 0; j < 3; ++j) {
            k(0, 0, j, 0) = 16.0f * s[j];
            v(0, 0, j, j + 1) = 1.0f;
        }
    }
    // out (1, 1, 1, d_head) holds (0, p0, p1, 0, 0, ...)
    static void check_output(const Tensor4& out) {
        REQUIRE(out.size() == d_head);
        CHECK(all_finite(out));
        CHECK(out(0, 0, 0, 0) == 0.0f);
        CHECK(std::abs(out(0, 0, 0, 1) - p0) < 1e-6);
        CHECK(std::abs(out(0, 0, 0, 2) - p1) < 1e-6);
        CHECK(std::abs(out(0, 0, 0, 3)) < 1e-30);
        CHECK(std::all_of(out.begin() + 4, out.end(), [](float x) { return x == 0.0f; }));
    }
};

// q, k, v (B, H, N, d_head) with N(0, 1) entries; k and v may have another length.
struct Qkv {
    Tensor4 q, k, v;
    Qkv(std::size_t b, std::size_t h, std::size_t nq, std::size_t nk, std::size_t d, std::uint64_t seed) {
        Random rng(seed);
        q = rng.normal<4>({b, h, nq, d});
        k = rng.normal<4>({b, h, nk, d});
        v = rng.normal<4>({b, h, nk, d});
    }
};

}  // namespace

TEST_CASE("softmax of logits +-1e4 is finite and equals the hand-worked values", "[numerics][softmax]") {
    Tensor2 x = Tensor2::from_shape({2, 3});  // (rows, cols)
    x(0, 0) = big, x(0, 1) = big - 1.0f, x(0, 2) = -big;
    x(1, 0) = -big, x(1, 1) = -big, x(1, 2) = -big;  // all equal, however negative: uniform
    const Tensor2 p = softmax(x);
    CHECK(all_finite(p));
    CHECK(std::abs(p(0, 0) - p0) < 1e-6);
    CHECK(std::abs(p(0, 1) - p1) < 1e-6);
    CHECK(p(0, 2) == 0.0f);
    for (std::size_t j = 0; j < 3; ++j) CHECK(std::abs(p(1, j) - 1.0 / 3.0) < 1e-6);
}

TEST_CASE("softmax of a row that is entirely -inf is zeros, next to a normal row", "[numerics][softmax]") {
    Tensor2 x = Tensor2::from_shape({2, 4});  // (rows, cols)
    x.fill(-std::numeric_limits<float>::infinity());
    x(1, 2) = 3.0f;  // row 1 has one visible position: weight exactly 1 there
    const Tensor2 p = softmax(x);
    for (std::size_t j = 0; j < 4; ++j) {
        CHECK(p(0, j) == 0.0f);
        CHECK(p(1, j) == (j == 2 ? 1.0f : 0.0f));
    }
}

TEST_CASE("attention with scores +-1e4 at d_head 256 equals the hand-worked weights in every path",
          "[numerics][attention]") {
    const ThreeKeys t;
    SECTION("scaled_dot_product_attention, fused (no weights)") {
        ThreeKeys::check_output(scaled_dot_product_attention(t.q, t.k, t.v));
    }
    SECTION("scaled_dot_product_attention, weights materialised") {
        Tensor4 w;  // (B, H, N_q, N_k)
        ThreeKeys::check_output(scaled_dot_product_attention(t.q, t.k, t.v, {}, &w));
        CHECK(std::abs(w(0, 0, 0, 0) - p0) < 1e-6);
        CHECK(std::abs(w(0, 0, 0, 1) - p1) < 1e-6);
        CHECK(w(0, 0, 0, 2) == 0.0f);
    }
    SECTION("attention_reference") { ThreeKeys::check_output(attention_reference(t.q, t.k, t.v)); }
    SECTION("the naive kernel on the emulator (the one kernel built for any d_head)") {
        REQUIRE(kernels::supports(kernels::Version::naive, 256));
        kernels::Problem p;
        p.batch = 1, p.heads = 1, p.seq = 3, p.d_head = 256;
        // The kernels take one N for queries and keys: three queries, all equal to q.
        Tensor4 q3 = Tensor4::from_shape({1, 1, 3, 256});  // (B, H, N, d_head)
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t d = 0; d < 256; ++d) q3(0, 0, i, d) = t.q(0, 0, 0, d);
        const int key_len = 3;
        Tensor4 out = Tensor4::from_shape({1, 1, 3, 256});  // (B, H, N, d_head)
        out.fill(12345.0f);
        kernels::emulate(kernels::Version::naive, p, {q3.data(), t.k.data(), t.v.data(), &key_len}, out.data());
        for (std::size_t i = 0; i < 3; ++i) {
            INFO("query " << i);
            Tensor4 row = Tensor4::from_shape({1, 1, 1, 256});
            for (std::size_t d = 0; d < 256; ++d) row(0, 0, 0, d) = out(0, 0, i, d);
            ThreeKeys::check_output(row);
        }
    }
}

TEST_CASE(
    "MultiHeadAttention with scores +-1e4 at d_head 256: fused and weights paths agree with the hand-worked weights",
    "[numerics][attention]") {
    // d_model 256, one head, every projection the identity: the heads see query, key and value as given.
    const ThreeKeys t;
    constexpr std::size_t d = 256;
    MultiHeadAttention mha;
    mha.heads = 1;
    mha.in_proj_weight = Tensor2::from_shape({3 * d, d});  // (3 * d_model, d_model): [I; I; I]
    mha.in_proj_weight.fill(0.0f);
    for (std::size_t r = 0; r < 3 * d; ++r) mha.in_proj_weight(r, r % d) = 1.0f;
    mha.out_proj_weight = Tensor2::from_shape({d, d});  // (d_model, d_model): I
    mha.out_proj_weight.fill(0.0f);
    for (std::size_t r = 0; r < d; ++r) mha.out_proj_weight(r, r) = 1.0f;
    // With one head, (B, H=1, N, d_head) and (B, N, d_model) hold the same numbers in the same order.
    auto drop_heads = [](const Tensor4& x) {
        Tensor3 y = Tensor3::from_shape({x.shape()[0], x.shape()[2], x.shape()[3]});
        std::copy(x.begin(), x.end(), y.begin());
        return y;
    };
    const Tensor3 query = drop_heads(t.q);  // (B=1, N_q=1, d_model)
    const Tensor3 key = drop_heads(t.k);    // (1, N_k=3, d_model)
    const Tensor3 value = drop_heads(t.v);  // (1, N_k=3, d_model)
    for (const bool with_weights : {false, true}) {
        INFO((with_weights ? "weights path" : "fused path"));
        Tensor4 w;                                                                            // (B, H, N_q, N_k)
        const Tensor3 out = mha.forward(query, key, value, {}, with_weights ? &w : nullptr);  // (1, 1, d_model)
        Tensor4 as4 = Tensor4::from_shape({1, 1, 1, d});
        std::copy(out.begin(), out.end(), as4.begin());
        ThreeKeys::check_output(as4);
    }
}

TEST_CASE("a query whose keys are all masked gets zeros, not NaN, in every library path", "[numerics][mask]") {
    // Sequence 1 is all padding; in sequence 0, query 0 is causal and its only key is padding.
    const Qkv x(2, 3, 4, 4, 16, 7);
    Mask2 padding = Mask2::from_shape({2, 4});  // (B, N_k), true = ignored
    padding.fill(false);
    for (std::size_t j = 0; j < 4; ++j) padding(1, j) = true;
    padding(0, 0) = true;
    AttentionOptions o;
    o.causal = true;
    o.key_padding_mask = &padding;

    auto check_zero_rows = [](const Tensor4& out, const std::string& path) {
        INFO(path);
        CHECK(all_finite(out));
        bool zeros = true;
        for (std::size_t h = 0; h < 3; ++h)
            for (std::size_t d = 0; d < 16; ++d) {
                zeros = zeros && out(0, h, 0, d) == 0.0f;  // sequence 0, query 0
                for (std::size_t i = 0; i < 4; ++i) zeros = zeros && out(1, h, i, d) == 0.0f;
            }
        CHECK(zeros);
        bool others_nonzero = false;  // and the rows that do see keys are not zeroed with them
        for (std::size_t d = 0; d < 16; ++d) others_nonzero = others_nonzero || out(0, 0, 1, d) != 0.0f;
        CHECK(others_nonzero);
    };
    Tensor4 w;  // (B, H, N_q, N_k)
    check_zero_rows(scaled_dot_product_attention(x.q, x.k, x.v, o), "scaled_dot_product_attention, fused");
    check_zero_rows(scaled_dot_product_attention(x.q, x.k, x.v, o, &w), "scaled_dot_product_attention, weights");
    CHECK(all_finite(w));
    CHECK(std::all_of(w.begin(), w.end(), [](float p) { return p >= 0.0f && p <= 1.0f; }));
    Tensor4 w_ref;  // (B, H, N_q, N_k)
    check_zero_rows(attention_reference(x.q, x.k, x.v, o, &w_ref), "attention_reference");
    CHECK(max_abs_diff(w, w_ref) < 1e-6);

    SECTION("MultiHeadAttention, fused and weights paths: zero attention, so the output is out_proj's bias") {
        Random rng(3);
        const MultiHeadAttention mha = MultiHeadAttention::random(48, 3, true, rng);
        const Tensor3 seq = rng.normal<3>({2, 4, 48});  // (B, N, d_model)
        for (const bool with_weights : {false, true}) {
            INFO((with_weights ? "weights path" : "fused path"));
            Tensor4 mw;                                                             // (B, H, N, N)
            const Tensor3 out = mha.forward(seq, o, with_weights ? &mw : nullptr);  // (B, N, d_model)
            CHECK(all_finite(out));
            bool bias_only = true;
            for (std::size_t c = 0; c < 48; ++c) {
                bias_only = bias_only && std::abs(out(0, 0, c) - mha.out_proj_bias(c)) < 1e-6;
                for (std::size_t i = 0; i < 4; ++i)
                    bias_only = bias_only && std::abs(out(1, i, c) - mha.out_proj_bias(c)) < 1e-6;
            }
            CHECK(bias_only);
        }
    }
}

TEST_CASE("float32 attention is within the stated tolerance of double precision at every lesson's sizes",
          "[numerics][attention]") {
    struct Size {
        const char* lesson;
        std::size_t batch, heads, nq, nk, d_head;
        bool causal;
    };
    // The lessons' defaults: 01 one head of d 64; 02-04 d_model 64 in 8 heads; 03's cross-attention
    // reads M = 7 keys; 05 computes no attention; 06 N = 1024 in 2 heads of 64. Plus d_head 256.
    const Size sizes[] = {
        {"01_single_head", 2, 1, 5, 5, 64, false},
        {"02_split_merge", 2, 8, 5, 5, 8, false},
        {"03_multi_head", 2, 8, 5, 5, 8, false},
        {"03_multi_head cross", 2, 8, 5, 7, 8, false},
        {"04_causal_mask", 2, 8, 5, 5, 8, true},
        {"06_cuda_kernel", 1, 2, 1024, 1024, 64, false},
        {"06_cuda_kernel --causal", 1, 2, 1024, 1024, 64, true},
        {"d_head 256", 1, 2, 64, 64, 256, false},
    };
    std::uint64_t seed = 11;
    for (const Size& s : sizes) {
        INFO(s.lesson);
        const Qkv x(s.batch, s.heads, s.nq, s.nk, s.d_head, seed++);
        AttentionOptions o;
        o.causal = s.causal;
        const Tensor4 ref = attention_reference(x.q, x.k, x.v, o);  // (B, H, N_q, d_head), double inside
        CHECK(excess(scaled_dot_product_attention(x.q, x.k, x.v, o), ref) == 0.0);
        Tensor4 w;  // (B, H, N_q, N_k)
        CHECK(excess(scaled_dot_product_attention(x.q, x.k, x.v, o, &w), ref) == 0.0);
    }
}

TEST_CASE("random logits up to +-1e4 at d_head 256 stay finite and close to the double reference",
          "[numerics][attention]") {
    Qkv x(1, 2, 64, 64, 256, 5);
    x.q *= 600.0f;  // q . k / 16 has a standard deviation of 600: scores reach +-1e4 and beyond
    const Tensor4 ref = attention_reference(x.q, x.k, x.v);  // (B, H, N, d_head)
    for (const bool with_weights : {false, true}) {
        INFO((with_weights ? "weights path" : "fused path"));
        Tensor4 w;  // (B, H, N, N)
        const Tensor4 out = scaled_dot_product_attention(x.q, x.k, x.v, {}, with_weights ? &w : nullptr);
        CHECK(all_finite(out));
        // A float holds a score near 1e4 only to about 1e-3, so a weight may move by that much
        // (and the output, an average of N(0, 1) values, too); an overflow would be NaN or inf.
        CHECK(max_abs_diff(out, ref) < 5e-3);
    }
}
