#include "headwise/base/cli.hpp"

#include <catch2/catch.hpp>

#include <limits>

using namespace headwise;

TEST_CASE("cli: d_model not divisible by heads names the would-be d_head", "[cli]") {
    try {
        cli::require_divisible(64, 7);
        FAIL("expected a usage_error");
    } catch (const usage_error& e) {
        const std::string msg = e.what();
        CHECK_THAT(msg, Catch::Contains("--d-model 64"));
        CHECK_THAT(msg, Catch::Contains("--heads 7"));
        CHECK_THAT(msg, Catch::Contains("9.143"));
    }
    CHECK_NOTHROW(cli::require_divisible(64, 8));
}

TEST_CASE("cli: an element count that would overflow is refused", "[cli]") {
    const std::size_t big = std::numeric_limits<std::size_t>::max() / 2;
    CHECK_THROWS_AS(cli::checked_product({big, 3}, "test"), usage_error);
    CHECK(cli::checked_product({2, 3, 4}, "test") == 24);
}

TEST_CASE("cli: a request for more memory than the machine has is refused before allocating", "[cli]") {
    CHECK_THROWS_AS(cli::require_memory(std::size_t(1) << 62, "a huge tensor"), usage_error);
    CHECK_NOTHROW(cli::require_memory(1024, "a small tensor"));
}

TEST_CASE("cli: guard turns a usage_error into exit code 2", "[cli]") {
    CHECK(cli::guard("prog", []() -> int { throw usage_error("bad"); }) == cli::exit_usage);
    CHECK(cli::guard("prog", [] { return 0; }) == 0);
}
