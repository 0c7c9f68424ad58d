// Grader for exercise 01: softmax over the last axis and single-head scaled dot-product attention.
//
// Oracles: hand-worked rows, the library's softmax (tests/softmax_test.cpp) and its double-precision
// attention_reference (tests/attention_test.cpp). Tolerance: grade::Tolerance (1e-4 + 1e-4 |expected|).
#include "01_single_head.hpp"
#include "grade.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/base/random.hpp"
#include "headwise/reference/softmax.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

using namespace headwise;
using grade::Ex01;

namespace {

constexpr std::string_view bnn = "B, N_q, N_k";

// softmax(q k^T / sqrt(d)) v: weights from the library's double-precision reference, the
// output summed in double here (the reference wants v shaped like k; here d_v may differ).
struct Reference {
    Tensor3 out;      // (B, N_q, d_v)
    Tensor3 weights;  // (B, N_q, N_k)
};
Reference reference(const Tensor3& q, const Tensor3& k, const Tensor3& v) {
    const Tensor4 q4 = xt::expand_dims(q, 1), k4 = xt::expand_dims(k, 1);  // (B, 1, N, d)
    Tensor4 w4;
    attention_reference(q4, k4, k4, {}, &w4);  // w4 (B, 1, N_q, N_k)
    const std::size_t batch = q.shape()[0], n_q = q.shape()[1], n_k = k.shape()[1], d_v = v.shape()[2];
    Reference r{Tensor3::from_shape({batch, n_q, d_v}), Tensor3::from_shape({batch, n_q, n_k})};
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t i = 0; i < n_q; ++i) {
            for (std::size_t j = 0; j < n_k; ++j) r.weights(b, i, j) = w4(b, 0, i, j);
            for (std::size_t c = 0; c < d_v; ++c) {
                double acc = 0.0;
                for (std::size_t j = 0; j < n_k; ++j) acc += double(w4(b, 0, i, j)) * double(v(b, j, c));
                r.out(b, i, c) = static_cast<float>(acc);
            }
        }
    return r;
}

struct Shape {
    std::size_t batch, n_q, n_k, d, d_v;
};

// Checks output and weights of attention(q, k, v) against the reference.
void expect_attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, const std::string& label) {
    const Reference r = reference(q, k, v);
    const std::string call =
        fmt::format("attention(q {}, k {}, v {}){}", grade::shape_of(q), grade::shape_of(k), grade::shape_of(v), label);
    // In the lesson's order: the weights first, then the output built from them.
    const bool weights_ok = grade::expect<Ex01>(
        {.what = call + ", weights", .dims = bnn, .exp_of_finite_inputs = true},
        [&](const Ex01& ex) {
            Tensor3 w;
            ex.attention(q, k, v, &w);
            return w;
        },
        r.weights);
    grade::expect<Ex01>(
        {.what = call + ", output",
         .dims = "B, N_q, d_v",
         .after = weights_ok ? "the weights" : "",
         .exp_of_finite_inputs = true},
        [&](const Ex01& ex) { return ex.attention(q, k, v, nullptr); }, r.out);
}

void expect_random_attention(const std::vector<Shape>& shapes, float spread = 1.0f) {
    for (const Shape& s : shapes) {
        for (std::uint64_t seed : {1u, 2u, 3u}) {
            Random rng(seed);
            const Tensor3 q = rng.normal<3>({s.batch, s.n_q, s.d}, spread);
            const Tensor3 k = rng.normal<3>({s.batch, s.n_k, s.d}, spread);
            const Tensor3 v = rng.normal<3>({s.batch, s.n_k, s.d_v});
            expect_attention(q, k, v, fmt::format(" with seed {}", seed));
        }
    }
}

}  // namespace

TEST_CASE("softmax_last_axis: hand-worked rows come out as 1/6, 1/3, 1/2", "[ex01]") {
    const float l2 = std::log(2.0f), l3 = std::log(3.0f);
    const Tensor3 scores = {{{0.0f, l2, l3}, {l3, 0.0f, l2}}};  // (1, 2, 3): exps (1, 2, 3) and (3, 1, 2)
    const Tensor3 expected = {{{1.0f / 6, 2.0f / 6, 3.0f / 6}, {3.0f / 6, 1.0f / 6, 2.0f / 6}}};
    grade::expect<Ex01>(
        {.what = "softmax_last_axis(scores (1, 2, 3))", .dims = bnn, .exp_of_finite_inputs = true},
        [&](const Ex01& ex) { return ex.softmax_last_axis(scores); }, expected);
}

TEST_CASE("softmax_last_axis: matches the library's softmax for many shapes and seeds", "[ex01]") {
    const std::vector<std::array<std::size_t, 3>> shapes = {{1, 1, 1}, {1, 1, 5}, {2, 4, 4}, {3, 5, 2}, {2, 7, 9}};
    for (const auto& shape : shapes) {
        for (std::uint64_t seed : {1u, 2u, 3u}) {
            Random rng(seed);
            const Tensor3 scores = rng.normal<3>(shape, 3.0f);
            grade::expect<Ex01>(
                {.what = fmt::format("softmax_last_axis(scores {}) with seed {}", grade::shape_of(scores), seed),
                 .dims = bnn,
                 .exp_of_finite_inputs = true},
                [&](const Ex01& ex) { return ex.softmax_last_axis(scores); }, softmax(scores));
        }
    }
}

TEST_CASE("softmax_last_axis: scores of +-1e4 give finite weights", "[ex01]") {
    // Row 0: exps relative to the maximum are (1, e^-1, 0). Row 1: (e^-2, e^-2, 1).
    const Tensor3 scores = {{{1e4f, 1e4f - 1.0f, -1e4f}, {-1e4f, -1e4f, -1e4f + 2.0f}}};  // (1, 2, 3)
    const double e1 = std::exp(-1.0), e2 = std::exp(-2.0);
    const Tensor3 expected = {{{float(1 / (1 + e1)), float(e1 / (1 + e1)), 0.0f},
                               {float(e2 / (1 + 2 * e2)), float(e2 / (1 + 2 * e2)), float(1 / (1 + 2 * e2))}}};
    grade::expect<Ex01>(
        {.what = "softmax_last_axis(scores (1, 2, 3) of size 1e4)", .dims = bnn, .exp_of_finite_inputs = true},
        [&](const Ex01& ex) { return ex.softmax_last_axis(scores); }, expected);
}

TEST_CASE("attention: hand-worked query with d = 4 gives weights 3/4, 1/4", "[ex01]") {
    // q . k_0 = 2 ln 3, divided by sqrt(4) = ln 3; q . k_1 = 0. softmax(ln 3, 0) = (3/4, 1/4).
    const float l3 = std::log(3.0f);
    const Tensor3 q = {{{2 * l3, 0.0f, 0.0f, 0.0f}}};                          // (1, 1, 4)
    const Tensor3 k = {{{1.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f, 0.0f}}};  // (1, 2, 4)
    const Tensor3 v = {{{1.0f, 2.0f}, {3.0f, 4.0f}}};                          // (1, 2, 2)
    const Tensor3 out = {{{0.75f * 1 + 0.25f * 3, 0.75f * 2 + 0.25f * 4}}};    // (1, 1, 2)
    const Tensor3 weights = {{{0.75f, 0.25f}}};                                // (1, 1, 2)
    grade::expect<Ex01>(
        {.what = "attention(q (1, 1, 4), k (1, 2, 4), v (1, 2, 2)), output",
         .dims = "B, N_q, d_v",
         .exp_of_finite_inputs = true},
        [&](const Ex01& ex) { return ex.attention(q, k, v, nullptr); }, out);
    grade::expect<Ex01>(
        {.what = "attention(q (1, 1, 4), k (1, 2, 4), v (1, 2, 2)), weights",
         .dims = bnn,
         .exp_of_finite_inputs = true},
        [&](const Ex01& ex) {
            Tensor3 w;
            ex.attention(q, k, v, &w);
            return w;
        },
        weights);
}

TEST_CASE("attention: self-attention matches the reference for d = 1, 8, 64 and batches", "[ex01]") {
    expect_random_attention({{1, 1, 1, 1, 1}, {1, 3, 3, 1, 1}, {2, 5, 5, 8, 8}, {1, 4, 4, 64, 64}, {3, 6, 6, 16, 16}});
}

TEST_CASE("attention: cross-attention with N_q != N_k and d_v != d", "[ex01]") {
    expect_random_attention({{2, 3, 7, 16, 5}, {1, 1, 4, 8, 3}, {2, 6, 2, 4, 9}});
}

TEST_CASE("attention: large scores stay finite", "[ex01]") {
    // q and k entries of size ~30 make q . k / sqrt(d) reach a few thousand: exp() of that is inf.
    expect_random_attention({{2, 4, 5, 16, 8}}, 30.0f);
}
