#include "headwise/base/random.hpp"

#include <catch2/catch.hpp>

using headwise::Random;

// The reference outputs of SplitMix64 for seed 0, as published with the algorithm: if these
// change, every lesson's printed numbers change on every machine.
TEST_CASE("random: SplitMix64 reproduces its published first outputs for seed 0", "[random]") {
    Random rng(0);
    CHECK(rng.next_u64() == 0xe220a8397b1dcdafULL);
    CHECK(rng.next_u64() == 0x6e789e6aa1b965f4ULL);
    CHECK(rng.next_u64() == 0x06c45d188009454fULL);
}

TEST_CASE("random: uniform01 keeps the top 24 bits exactly", "[random]") {
    Random rng(0);
    CHECK(rng.uniform01() == 0xe220a8 * 0x1.0p-24f);  // 0.8833107948...
    CHECK(rng.uniform01() == 0x6e789e * 0x1.0p-24f);  // 0.4315279722...
    CHECK(rng.uniform01() == 0x06c45d * 0x1.0p-24f);  // 0.0264337658...
}

TEST_CASE("random: the same seed gives the same tensor, another seed a different one", "[random]") {
    Random a(42), b(42), c(43);
    const auto ta = a.normal<2>({4, 5});
    const auto tb = b.normal<2>({4, 5});
    const auto tc = c.normal<2>({4, 5});
    // (compared via bool: Catch2's expression decomposer and xtensor's operators do not mix)
    const bool same = ta == tb;
    const bool other = ta == tc;
    CHECK(same);
    CHECK_FALSE(other);
}

TEST_CASE("random: normal() has mean near 0 and variance near 1", "[random]") {
    Random rng(7);
    const int n = 200000;
    double s = 0, s2 = 0;
    for (int i = 0; i < n; ++i) {
        const double x = rng.normal();
        s += x;
        s2 += x * x;
    }
    const double mean = s / n, var = s2 / n - mean * mean;
    CHECK(std::abs(mean) < 0.01);
    CHECK(var == Approx(1.0).epsilon(0.02));
}

TEST_CASE("random: linear_weight stays inside PyTorch's bound 1/sqrt(in)", "[random]") {
    Random rng(1);
    const auto w = rng.linear_weight(8, 16);  // bound 0.25
    CHECK(w.shape()[0] == 8);
    CHECK(w.shape()[1] == 16);
    for (float x : w) {
        CHECK(x >= -0.25f);
        CHECK(x < 0.25f);
    }
}
