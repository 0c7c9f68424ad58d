// Grader for exercise 02: split_heads and merge_heads.
//
// Oracles: hand-worked tensors of counting numbers, and the library's split_heads/merge_heads
// (tests/attention_test.cpp). Moving numbers around is exact, so the tolerance is 0.
#include "02_split_merge.hpp"
#include "grade.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/base/random.hpp"

#include <fmt/format.h>

#include <cstdint>

using namespace headwise;
using grade::Ex02;

namespace {

constexpr grade::Tolerance exact{0.0, 0.0};

struct Split {
    std::size_t batch, n, d_model, heads;
};
// B > 1, N = 1, H = 1, d_head = 1, d_model = 32 with H = 4, and the (2, 8, 5, 8) of lesson 02.
const std::vector<Split> shapes = {{2, 5, 64, 8}, {1, 1, 1, 1},  {3, 4, 6, 6}, {2, 1, 8, 2},
                                   {2, 7, 12, 1}, {2, 6, 32, 4}, {1, 3, 12, 3}};

Tensor3 random_x(const Split& s, std::uint64_t seed) {
    Random rng(seed);
    return rng.normal<3>({s.batch, s.n, s.d_model});
}

}  // namespace

TEST_CASE("split_heads: hand-worked (1, 2, 4) into 2 heads of width 2", "[ex02]") {
    const Tensor3 x = {{{0, 1, 2, 3}, {4, 5, 6, 7}}};  // (1, 2, 4): token 0 holds 0..3, token 1 holds 4..7
    // Head 0 gets features 0-1 of each token, head 1 features 2-3.
    const Tensor4 expected = {{{{0, 1}, {4, 5}}, {{2, 3}, {6, 7}}}};  // (1, 2, 2, 2)
    grade::expect<Ex02>(
        {.what = "split_heads(x (1, 2, 4), heads = 2)", .dims = "B, H, N, d_head", .tol = exact},
        [&](const Ex02& ex) { return ex.split_heads(x, 2); }, expected);
}

TEST_CASE("split_heads: every head gets its own (B, H, N, d_head) slice, for many shapes", "[ex02]") {
    for (const Split& s : shapes) {
        const Tensor3 x = random_x(s, 7);
        grade::expect<Ex02>(
            {.what = fmt::format("split_heads(x {}, heads = {})", grade::shape_of(x), s.heads),
             .dims = "B, H, N, d_head",
             .tol = exact},
            [&](const Ex02& ex) { return ex.split_heads(x, s.heads); }, split_heads(x, s.heads));
    }
}

TEST_CASE("split_heads: refuses a d_model that heads does not divide", "[ex02]") {
    const Tensor3 x = Tensor3::from_shape({1, 2, 10});
    grade::expect_usage_error<Ex02>("split_heads(x (1, 2, 10), heads = 4)",
                                    [&](const Ex02& ex) { return ex.split_heads(x, 4); });
    grade::expect_usage_error<Ex02>("split_heads(x (1, 2, 10), heads = 0)",
                                    [&](const Ex02& ex) { return ex.split_heads(x, 0); });
    // A remainder of 1 (the last feature would be lost), and more heads than features.
    const Tensor3 odd = Tensor3::from_shape({1, 2, 7});
    grade::expect_usage_error<Ex02>("split_heads(x (1, 2, 7), heads = 2)",
                                    [&](const Ex02& ex) { return ex.split_heads(odd, 2); });
    grade::expect_usage_error<Ex02>("split_heads(x (1, 2, 10), heads = 12)",
                                    [&](const Ex02& ex) { return ex.split_heads(x, 12); });
}

TEST_CASE("merge_heads: hand-worked (1, 2, 2, 2) back to (1, 2, 4)", "[ex02]") {
    const Tensor4 heads = {{{{0, 1}, {4, 5}}, {{2, 3}, {6, 7}}}};  // (1, 2, 2, 2)
    const Tensor3 expected = {{{0, 1, 2, 3}, {4, 5, 6, 7}}};       // (1, 2, 4)
    grade::expect<Ex02>(
        {.what = "merge_heads(x (1, 2, 2, 2))", .dims = "B, N, d_model", .tol = exact},
        [&](const Ex02& ex) { return ex.merge_heads(heads); }, expected);
}

TEST_CASE("merge_heads: the heads go back side by side into (B, N, d_model), for many shapes", "[ex02]") {
    for (const Split& s : shapes) {
        Random rng(11);
        const Tensor4 x = rng.normal<4>({s.batch, s.heads, s.n, s.d_model / s.heads});
        grade::expect<Ex02>(
            {.what = fmt::format("merge_heads(x {})", grade::shape_of(x)), .dims = "B, N, d_model", .tol = exact},
            [&](const Ex02& ex) { return ex.merge_heads(x); }, merge_heads(x));
    }
}

TEST_CASE("merge_heads(split_heads(x)) gives x back exactly", "[ex02]") {
    for (const Split& s : shapes) {
        const Tensor3 x = random_x(s, 5);
        grade::expect<Ex02>(
            {.what = fmt::format("merge_heads(split_heads(x {}, heads = {}))", grade::shape_of(x), s.heads),
             .dims = "B, N, d_model",
             .tol = exact},
            [&](const Ex02& ex) { return ex.merge_heads(ex.split_heads(x, s.heads)); }, x);
    }
}
