// tests for headwise/model/head_roles.hpp on hand-made weight matrices whose scores are known by eye.
#include "headwise/model/head_roles.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace headwise;
using Catch::Matchers::Contains;

namespace {

// Row i puts everything on key i - 1 (row 0 on itself).
Tensor2 shifted(std::size_t n) {
    Tensor2 w = xt::zeros<float>({n, n});
    for (std::size_t i = 0; i < n; ++i) w(i, i == 0 ? 0 : i - 1) = 1.0f;
    return w;
}

}  // namespace

TEST_CASE("a shift-by-one matrix is a perfect previous-token head and no next-token head", "[head_roles]") {
    const Tensor2 w = shifted(5);
    CHECK(roles::previous_token(w, 5) == 1.0);
    CHECK(roles::next_token(w, 5) == 0.0);
    CHECK(roles::next_token(xt::transpose(w), 5) == 1.0);  // the transpose looks one ahead
    CHECK(roles::mean_entropy(w, 5) == 0.0);
}

TEST_CASE("uniform rows have entropy ln n and give each key a share of 1/n", "[head_roles]") {
    const Tensor2 w = xt::ones<float>({4, 4}) / 4.0f;
    CHECK(roles::mean_entropy(w, 4) == Approx(std::log(4.0)));
    CHECK(roles::share_on(w, 4, 0) == Approx(0.25));
    CHECK(roles::previous_token(w, 4) == Approx(0.25));
}

TEST_CASE("head roles look only at the real tokens, not the padding", "[head_roles]") {
    Tensor2 w = xt::zeros<float>({4, 4});
    for (std::size_t i = 0; i < 3; ++i) w(i, 0) = 1.0f;  // 3 real tokens, all on [CLS]
    w(3, 3) = 1.0f;                                      // a padded row, ignored
    CHECK(roles::share_on(w, 3, 0) == 1.0);
    CHECK(roles::share_on(w, 3, 2) == 0.0);
    CHECK(roles::mean_entropy(w, 3) == 0.0);
    CHECK_THROWS_WITH(roles::share_on(w, 3, 3), Contains("not one of the 3 real tokens"));
    CHECK_THROWS_WITH(roles::previous_token(w, 5), Contains("1..N tokens"));
}

TEST_CASE("a head's role is the strongest measure past lesson 07's cut, else its entropy", "[head_roles]") {
    CHECK(roles::role(shifted(5), 5) == "previous-token");
    CHECK(roles::role(xt::transpose(shifted(5)), 5) == "next-token");
    Tensor2 sink = xt::zeros<float>({4, 4});
    for (std::size_t i = 0; i < 4; ++i) sink(i, 0) = 1.0f;
    CHECK(roles::role(sink, 4) == "[CLS] sink");
    CHECK(roles::role(xt::flip(sink, 1), 4) == "[SEP] sink");
    CHECK(roles::role(sink, 4, "the", "mat") == "the sink");  // the end tokens are named by the caller
    // Each token on itself: certain rows (entropy 0) but none of the named roles.
    CHECK(roles::role(xt::eye<float>(4), 4) == "sharp");
    CHECK(roles::role(xt::ones<float>({4, 4}) / 4.0f, 4) == "broad");
    Tensor2 half = xt::eye<float>(4) * 0.5f + 0.125f;  // each row: 0.625 on itself, 0.125 on the rest
    CHECK(roles::role(half, 4) == "mixed");
}
