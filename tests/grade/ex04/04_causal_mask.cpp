// Grader for exercise 04: the causal mask and masked attention (attention mask + key padding).
//
// Oracles: hand-worked masks and weights, the library's causal_mask and its double-precision
// attention_reference with the same masks (tests/attention_test.cpp). Tolerance: grade::Tolerance.
#include "04_causal_mask.hpp"
#include "grade.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/base/random.hpp"

#include <fmt/format.h>

#include <cstdint>

using namespace headwise;
using grade::Ex04;

namespace {

const Mask2 no_mask;  // empty: nothing hidden

struct Problem {
    std::size_t batch, heads, n_q, n_k, d_head;
};

// Checks output and weights of masked_attention against the reference with the same masks.
void expect_masked(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Mask2& attn_mask, const Mask2& padding,
                   const std::string& label) {
    AttentionOptions o;
    o.attn_mask = attn_mask.size() ? &attn_mask : nullptr;
    o.key_padding_mask = padding.size() ? &padding : nullptr;
    Tensor4 expected_w;
    const Tensor4 expected = attention_reference(q, k, v, o, &expected_w);
    const std::string call =
        fmt::format("masked_attention(q {}, k {}{}{}){}", grade::shape_of(q), grade::shape_of(k),
                    attn_mask.size() ? ", attn_mask" : "", padding.size() ? ", key_padding_mask" : "", label);
    const bool weights_ok = grade::expect<Ex04>(
        {.what = call + ", weights", .dims = "B, H, N_q, N_k"},
        [&](const Ex04& ex) {
            Tensor4 w;
            ex.masked_attention(q, k, v, attn_mask, padding, w);
            return w;
        },
        expected_w);
    grade::expect<Ex04>(
        {.what = call + ", output", .dims = "B, H, N_q, d_head", .after = weights_ok ? "the weights" : ""},
        [&](const Ex04& ex) {
            Tensor4 w;
            return ex.masked_attention(q, k, v, attn_mask, padding, w);
        },
        expected);
}

// Batch element b has its last b keys as padding (at least one key stays visible).
Mask2 trailing_padding(std::size_t batch, std::size_t n_k) {
    Mask2 m = Mask2::from_shape({batch, n_k});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t j = 0; j < n_k; ++j) m(b, j) = j + std::min(b, n_k - 1) >= n_k;
    return m;
}

enum class Masks { causal, padding, both };

void expect_random(const std::vector<Problem>& problems, Masks masks) {
    for (const Problem& p : problems) {
        for (std::uint64_t seed : {1u, 2u}) {
            Random rng(seed);
            const Tensor4 q = rng.normal<4>({p.batch, p.heads, p.n_q, p.d_head});
            const Tensor4 k = rng.normal<4>({p.batch, p.heads, p.n_k, p.d_head});
            const Tensor4 v = rng.normal<4>({p.batch, p.heads, p.n_k, p.d_head});
            const Mask2 attn = masks == Masks::padding ? no_mask : causal_mask(p.n_q);
            const Mask2 padding = masks == Masks::causal ? no_mask : trailing_padding(p.batch, p.n_k);
            expect_masked(q, k, v, attn, padding, fmt::format(" with seed {}", seed));
        }
    }
}

}  // namespace

TEST_CASE("causal_mask: hand-worked n = 3 hides exactly the future", "[ex04]") {
    const Mask2 expected = {{false, true, true}, {false, false, true}, {false, false, false}};
    grade::expect<Ex04>(
        {.what = "causal_mask(3)", .dims = "N_q, N_k"}, [&](const Ex04& ex) { return ex.causal_mask(3); }, expected);
}

TEST_CASE("causal_mask: n = 1, 2, 5 and 8 match the library's", "[ex04]") {
    for (std::size_t n : {1u, 2u, 5u, 8u}) {
        grade::expect<Ex04>(
            {.what = fmt::format("causal_mask({})", n), .dims = "N_q, N_k"},
            [&](const Ex04& ex) { return ex.causal_mask(n); }, causal_mask(n));
    }
}

TEST_CASE("masked_attention: equal scores under the causal mask give rows 1, 1/2, 1/3", "[ex04]") {
    // q = k = 0: every score is 0, so each query spreads its weight evenly over the keys it sees.
    // v(j) = the j-th unit vector, so each output row equals that query's weights.
    const Tensor4 zeros = xt::zeros<float>(std::array<std::size_t, 4>{1, 1, 3, 3});
    Tensor4 v = zeros;
    for (std::size_t j = 0; j < 3; ++j) v(0, 0, j, j) = 1.0f;
    const Mask2 causal = {{false, true, true}, {false, false, true}, {false, false, false}};
    const Tensor4 expected = {{{{1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.0f}, {1.0f / 3, 1.0f / 3, 1.0f / 3}}}};
    grade::expect<Ex04>(
        {.what = "masked_attention(q = k = 0 (1, 1, 3, 3), causal mask), weights", .dims = "B, H, N_q, N_k"},
        [&](const Ex04& ex) {
            Tensor4 w;
            ex.masked_attention(zeros, zeros, v, causal, no_mask, w);
            return w;
        },
        expected);
    grade::expect<Ex04>(
        {.what = "masked_attention(q = k = 0 (1, 1, 3, 3), causal mask), output", .dims = "B, H, N_q, d_head"},
        [&](const Ex04& ex) {
            Tensor4 w;
            return ex.masked_attention(zeros, zeros, v, causal, no_mask, w);
        },
        expected);
}

TEST_CASE("masked_attention: the causal mask, many shapes (B > 1, H > 1, N = 1)", "[ex04]") {
    expect_random({{2, 3, 5, 5, 4}, {1, 1, 1, 1, 1}, {3, 2, 8, 8, 16}, {1, 4, 6, 6, 8}}, Masks::causal);
}

TEST_CASE("masked_attention: a key padding mask hides the padding from every query", "[ex04]") {
    expect_random({{3, 2, 4, 6, 4}, {2, 1, 5, 5, 8}}, Masks::padding);
}

TEST_CASE("masked_attention: causal and padding masks together", "[ex04]") {
    expect_random({{3, 2, 6, 6, 4}, {2, 4, 5, 5, 8}}, Masks::both);
}

TEST_CASE("masked_attention: cross-attention with an arbitrary (N_q, N_k) mask", "[ex04]") {
    Random rng(5);
    const Tensor4 q = rng.normal<4>({2, 2, 3, 4});
    const Tensor4 k = rng.normal<4>({2, 2, 5, 4});
    const Tensor4 v = rng.normal<4>({2, 2, 5, 4});
    const Mask2 mask = {
        {false, true, false, true, false}, {true, false, false, false, true}, {false, false, true, true, true}};
    expect_masked(q, k, v, mask, no_mask, "");
}

TEST_CASE("masked_attention: a query that sees no key gets zeros, not NaN", "[ex04]") {
    Random rng(9);
    const Tensor4 q = rng.normal<4>({2, 2, 3, 4});
    Mask2 padding = Mask2::from_shape({2, 3});
    padding.fill(false);
    for (std::size_t j = 0; j < 3; ++j) padding(1, j) = true;  // batch element 1 is all padding
    expect_masked(q, q, q, no_mask, padding, " (batch 1 all padding)");
}

TEST_CASE("masked_attention: large scores stay finite under the causal mask", "[ex04]") {
    // Entries of size ~10 make scores of a few hundred: exp() of that overflows a float, and a
    // softmax that does not subtract each row's own maximum underflows or overflows.
    Random rng(7);
    const Tensor4 q = rng.normal<4>({2, 2, 6, 8}, 10.0f);
    const Tensor4 k = rng.normal<4>({2, 2, 6, 8}, 10.0f);
    const Tensor4 v = rng.normal<4>({2, 2, 6, 8});
    expect_masked(q, k, v, causal_mask(6), no_mask, " with large scores");
}

TEST_CASE("masked_attention: rows whose visible scores are all about -5000 still sum to 1", "[ex04]") {
    // Every score q . k / sqrt(4) = -50 (100 + j + b + h) is large and negative (B = 2, H = 3,
    // N = 5, d_head = 4: every axis its own size): exp() of each underflows to 0 unless the row's
    // own maximum is subtracted first, and the row would be 0/0.
    Tensor4 q = Tensor4::from_shape({2, 3, 5, 4}), k = Tensor4::from_shape({2, 3, 5, 4});
    q.fill(0.0f), k.fill(0.0f);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 3; ++h)
            for (std::size_t j = 0; j < 5; ++j) q(b, h, j, 0) = 100.0f, k(b, h, j, 0) = -float(100 + j + b + h);
    const Tensor4 v = Random(3).normal<4>({2, 3, 5, 4});
    expect_masked(q, k, v, causal_mask(5), no_mask, " with scores near -5000");
}

TEST_CASE("masked_attention: without masks it is plain scaled dot-product attention", "[ex04]") {
    Random rng(4);
    const Tensor4 q = rng.normal<4>({2, 3, 4, 8});
    const Tensor4 k = rng.normal<4>({2, 3, 6, 8});
    const Tensor4 v = rng.normal<4>({2, 3, 6, 8});
    expect_masked(q, k, v, no_mask, no_mask, "");
}
