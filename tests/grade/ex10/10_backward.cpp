// Grader for exercise 10: the softmax backward of one row, and attention's backward (dQ, dK, dV)
// with the causal mask and key padding.
//
// Oracles: rows worked by hand; the softmax's whole N x N Jacobian, diag(p) - p p^T, applied to dp
// in double precision (a different computation from the O(N) form the exercise asks for); the
// library's double-precision attention_backward_reference (src/headwise/reference/
// attention_backward.hpp), itself checked against PyTorch autograd fixtures and finite
// differences (tests/attention_backward_test.cpp, lesson 10). Checks follow the lesson's order:
// dV (step 2), then dQ and dK (steps 4-7), so a wrong dQ after a right dV is placed after P.
#include "10_backward.hpp"
#include "grade.hpp"

#include "headwise/base/random.hpp"
#include "headwise/reference/attention_backward.hpp"

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace headwise;
using grade::Ex10;

namespace {

// ---------------------------------------------------------------------------------------------
// Part 1: one row of softmax.

// dp's rows of the Jacobian form, in double: ds_j = sum_i J[i, j] dp_i with J = diag(p) - p p^T.
Tensor1 jacobian_times(const Tensor1& p, const Tensor1& dp) {
    Tensor1 ds = Tensor1::from_shape({p.size()});
    for (std::size_t j = 0; j < p.size(); ++j) {
        double acc = 0.0;
        for (std::size_t i = 0; i < p.size(); ++i)
            acc += ((i == j ? double(p(i)) : 0.0) - double(p(i)) * double(p(j))) * double(dp(i));
        ds(j) = float(acc);
    }
    return ds;
}

// A softmax backward row always sums to 0 (softmax ignores a shift of its inputs): says so when
// the subject's does not.
std::string row_sum_note(const Tensor1& ds) {
    double sum = 0.0, scale = 0.0;
    for (const float x : ds) sum += x, scale += std::abs(x);
    if (std::abs(sum) <= 1e-4 * (1.0 + scale)) return "";
    return fmt::format("your ds sums to {:.4g}, where the softmax backward of any row sums to 0", sum);
}

void expect_row(const std::string& what, const Tensor1& p, const Tensor1& dp, const Tensor1& expected) {
    grade::expect<Ex10>(
        {.what = what, .dims = "N", .explain = row_sum_note},
        [&](const Ex10& ex) { return ex.softmax_backward_row(p, dp); }, expected);
}

// A softmax row of n entries from random scores of spread `spread`.
Tensor1 softmax_of_random(Random& rng, std::size_t n, float spread) {
    Tensor1 s = rng.normal<1>({n}, spread);
    const float m = xt::amax(s)();
    Tensor1 p = xt::exp(s - m);
    return p / xt::sum(p)();
}

// ---------------------------------------------------------------------------------------------
// Part 2: attention backward.

struct Problem {
    std::size_t batch, heads, n, d_head;
};

const Mask2 no_padding;  // empty: no key is padding

// Checks dV, then dQ and dK, of attention_backward against the library's double reference.
void expect_grads(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Tensor4& d_out, bool causal,
                  const Mask2& padding, const std::string& label, grade::Tolerance tol = {}) {
    AttentionOptions o;
    o.causal = causal;
    o.key_padding_mask = padding.size() ? &padding : nullptr;
    const AttentionGrads expected = attention_backward_reference(q, k, v, d_out, o);
    const std::string call = fmt::format("attention_backward(q {}{}{}){}", grade::shape_of(q), causal ? ", causal" : "",
                                         padding.size() ? ", key_padding_mask" : "", label);
    const auto run = [&](const Ex10& ex) { return ex.attention_backward(q, k, v, d_out, causal, padding); };
    const bool dv_ok = grade::expect<Ex10>(
        {.what = call + ", dv", .dims = "B, H, N, d_head", .tol = tol, .exp_of_finite_inputs = true},
        [&](const Ex10& ex) { return run(ex).dv; }, expected.dv);
    const std::string after = dv_ok ? "dv (so the weights P were recomputed right)" : "";
    grade::expect<Ex10>(
        {.what = call + ", dq", .dims = "B, H, N, d_head", .tol = tol, .after = after, .exp_of_finite_inputs = true},
        [&](const Ex10& ex) { return run(ex).dq; }, expected.dq);
    grade::expect<Ex10>(
        {.what = call + ", dk", .dims = "B, H, N, d_head", .tol = tol, .after = after, .exp_of_finite_inputs = true},
        [&](const Ex10& ex) { return run(ex).dk; }, expected.dk);
}

struct Inputs {
    Tensor4 q, k, v, d_out;  // each (B, H, N, d_head)
};

Inputs random_inputs(const Problem& p, std::uint64_t seed, float spread = 1.0f) {
    Random rng(seed);
    return {rng.normal<4>({p.batch, p.heads, p.n, p.d_head}, spread),
            rng.normal<4>({p.batch, p.heads, p.n, p.d_head}, spread), rng.normal<4>({p.batch, p.heads, p.n, p.d_head}),
            rng.normal<4>({p.batch, p.heads, p.n, p.d_head})};
}

// Batch element b has its last b + 1 keys as padding (key 0 always visible): every element is
// padded, each differently, so a mask read at another batch element's row is caught too.
Mask2 trailing_padding(std::size_t batch, std::size_t n) {
    Mask2 m = Mask2::from_shape({batch, n});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t j = 0; j < n; ++j) m(b, j) = j > 0 && j + b + 1 >= n;
    return m;
}

}  // namespace

TEST_CASE("softmax_backward_row: rows worked by hand", "[ex10][part1]") {
    // p = (0.2, 0.3, 0.5), dp = (1, 2, 3): rowsum(dp * p) = 2.3, ds = p * (dp - 2.3).
    expect_row("softmax_backward_row(p = (0.2, 0.3, 0.5), dp = (1, 2, 3))", Tensor1{0.2f, 0.3f, 0.5f},
               Tensor1{1.0f, 2.0f, 3.0f}, Tensor1{-0.26f, -0.09f, 0.35f});
    // Two equal weights: ds = (0.25, -0.25).
    expect_row("softmax_backward_row(p = (0.5, 0.5), dp = (1, 0))", Tensor1{0.5f, 0.5f}, Tensor1{1.0f, 0.0f},
               Tensor1{0.25f, -0.25f});
    // A constant dp moves nothing: softmax ignores a shift of its scores.
    expect_row("softmax_backward_row(p = (0.1, 0.2, 0.3, 0.4), dp = (5, 5, 5, 5))", Tensor1{0.1f, 0.2f, 0.3f, 0.4f},
               Tensor1{5.0f, 5.0f, 5.0f, 5.0f}, Tensor1{0.0f, 0.0f, 0.0f, 0.0f});
}

TEST_CASE("softmax_backward_row: random rows (N = 1, 7 and 64) match the whole Jacobian", "[ex10][part1]") {
    Random rng(3);
    for (const std::size_t n : {1u, 7u, 64u}) {
        const Tensor1 p = softmax_of_random(rng, n, 2.0f), dp = rng.normal<1>({n});
        expect_row(fmt::format("softmax_backward_row(p ({}), dp ({})) with seed 3", n, n), p, dp,
                   jacobian_times(p, dp));
    }
}

TEST_CASE("softmax_backward_row: a one-hot row gives no gradient at all", "[ex10][part1]") {
    expect_row("softmax_backward_row(p = (0, 1, 0), dp = (1, 2, 3))", Tensor1{0.0f, 1.0f, 0.0f},
               Tensor1{1.0f, 2.0f, 3.0f}, Tensor1{0.0f, 0.0f, 0.0f});
}

TEST_CASE("attention_backward: no mask, one head of one token and (B = 2, H = 3, N = 5, d_head = 4)", "[ex10][part2]") {
    for (const Problem& p : {Problem{1, 1, 1, 1}, Problem{2, 3, 5, 4}}) {
        const Inputs in = random_inputs(p, 1);
        expect_grads(in.q, in.k, in.v, in.d_out, false, no_padding, " with seed 1");
    }
}

TEST_CASE("attention_backward: the causal mask, many shapes (B > 1, H > 1, N = 1)", "[ex10][part2]") {
    for (const Problem& p : {Problem{2, 3, 5, 4}, Problem{1, 1, 1, 1}, Problem{3, 2, 7, 8}, Problem{1, 4, 6, 2}}) {
        for (const std::uint64_t seed : {1u, 2u}) {
            const Inputs in = random_inputs(p, seed);
            expect_grads(in.q, in.k, in.v, in.d_out, true, no_padding, fmt::format(" with seed {}", seed));
        }
    }
}

TEST_CASE("attention_backward: key padding, with and without the causal mask", "[ex10][part2]") {
    const Problem p{3, 2, 6, 4};
    const Inputs in = random_inputs(p, 4);
    const Mask2 padding = trailing_padding(p.batch, p.n);
    expect_grads(in.q, in.k, in.v, in.d_out, false, padding, " with seed 4");
    expect_grads(in.q, in.k, in.v, in.d_out, true, padding, " with seed 4");
}

TEST_CASE("attention_backward: a query that sees no key gets zero gradients, not NaN", "[ex10][part2]") {
    // Batch element 1 hides key 0: under the causal mask its query 0 sees nothing at all; batch
    // element 2 is all padding, so none of its queries sees a key.
    const Problem p{3, 2, 5, 4};
    const Inputs in = random_inputs(p, 9);
    Mask2 padding = Mask2::from_shape({p.batch, p.n});
    for (std::size_t b = 0; b < p.batch; ++b)
        for (std::size_t j = 0; j < p.n; ++j) padding(b, j) = (b == 1 && j == 0) || b == 2;
    expect_grads(in.q, in.k, in.v, in.d_out, true, padding, " (batch 1 hides key 0, batch 2 all padding)");
}

TEST_CASE("attention_backward: rows whose visible scores are all large and negative stay finite", "[ex10][part2]") {
    // q > 0 and k < 0 in every entry, both of size ~8: every score is about -100 or below, and a
    // softmax that does not subtract its row's maximum computes exp(-100 ...) = 0 for every key.
    const Problem p{2, 3, 5, 4};
    Inputs in = random_inputs(p, 7);
    in.q = 8.0f * xt::abs(in.q) + 1.0f;
    in.k = -8.0f * xt::abs(in.k) - 1.0f;
    expect_grads(in.q, in.k, in.v, in.d_out, true, no_padding, " with seed 7, scores <= -100",
                 grade::Tolerance{1e-3, 1e-3});
}
