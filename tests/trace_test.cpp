#include "headwise/base/trace.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <stdexcept>

using namespace headwise;

TEST_CASE("trace: a shape prints as a Python-style tuple", "[trace]") {
    const std::array<std::size_t, 4> s{2, 8, 5, 8};
    CHECK(format_shape(s) == "(2, 8, 5, 8)");
    CHECK(format_shape(std::array<std::size_t, 1>{7}) == "(7)");
}

TEST_CASE("trace: a shape prints with its dimension names", "[trace]") {
    const std::array<std::size_t, 4> s{2, 8, 5, 8};
    CHECK(format_shape(s, "B, H, N, d_head") == "(2, 8, 5, 8) [B, H, N, d_head]");
}

TEST_CASE("trace: naming the wrong number of dimensions is caught", "[trace]") {
    const std::array<std::size_t, 3> s{2, 5, 64};
    CHECK_THROWS_AS(format_shape(s, "B, H, N, d_head"), std::logic_error);
}
