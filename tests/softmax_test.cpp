#include "headwise/reference/softmax.hpp"
#include "headwise/fast/vexp.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace headwise;

TEST_CASE("softmax: a hand-worked 3x3 example", "[softmax]") {
    // Row 0: exp(0), exp(ln 2), exp(ln 3) = 1, 2, 3 -> 1/6, 2/6, 3/6.
    // Row 1: equal logits -> 1/3 each.  Row 2: a gap of 1e4 -> one-hot.
    Tensor2 x = {{0.0f, std::log(2.0f), std::log(3.0f)}, {5.0f, 5.0f, 5.0f}, {1e4f, 0.0f, -1e4f}};
    const Tensor2 p = softmax(x);
    CHECK(p(0, 0) == Approx(1.0 / 6));
    CHECK(p(0, 1) == Approx(2.0 / 6));
    CHECK(p(0, 2) == Approx(3.0 / 6));
    for (int j = 0; j < 3; ++j) CHECK(p(1, j) == Approx(1.0 / 3));
    CHECK(p(2, 0) == 1.0f);
    CHECK(p(2, 1) == 0.0f);
    CHECK(p(2, 2) == 0.0f);
}

TEST_CASE("softmax: every row sums to one", "[softmax]") {
    Tensor3 x = Tensor3::from_shape({2, 4, 7});
    for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = std::sin(float(i)) * 10.0f;
    const Tensor3 p = softmax(x);
    for (std::size_t r = 0; r < 8; ++r) {
        double s = 0;
        for (std::size_t j = 0; j < 7; ++j) s += p.data()[r * 7 + j];
        CHECK(s == Approx(1.0).epsilon(1e-6));
    }
}

TEST_CASE("softmax: stays finite for logits of +-1e4", "[softmax]") {
    Tensor2 x = {{1e4f, 1e4f - 1.0f}, {-1e4f, -1e4f - 1.0f}};
    const Tensor2 p = softmax(x);
    const double e = std::exp(-1.0);
    for (int r = 0; r < 2; ++r) {
        CHECK(std::isfinite(p(r, 0)));
        CHECK(p(r, 0) == Approx(1.0 / (1.0 + e)));
        CHECK(p(r, 1) == Approx(e / (1.0 + e)));
    }
}

TEST_CASE("softmax: a fully masked row becomes zeros, not NaN", "[softmax]") {
    const float inf = std::numeric_limits<float>::infinity();
    Tensor2 x = {{-inf, -inf, -inf}, {0.0f, -inf, 0.0f}};
    const Tensor2 p = softmax(x);
    for (int j = 0; j < 3; ++j) CHECK(p(0, j) == 0.0f);
    CHECK(p(1, 0) == Approx(0.5));
    CHECK(p(1, 1) == 0.0f);
}

TEST_CASE("softmax: entropy is ln(n) for uniform rows and 0 for one-hot rows", "[softmax]") {
    Tensor2 p = {{0.25f, 0.25f, 0.25f, 0.25f}, {1.0f, 0.0f, 0.0f, 0.0f}};
    const auto h = row_entropy(p);
    CHECK(h(0) == Approx(std::log(4.0)));
    CHECK(h(1) == 0.0f);
}

TEST_CASE("softmax: a NaN logit gives NaN weights, never a crash or a hidden number", "[softmax]") {
    Tensor2 x = {{0.0f, std::nanf(""), 1.0f}};
    const Tensor2 p = softmax(x);
    CHECK(std::isnan(p(0, 1)));
}

namespace {

// The instruction sets this CPU runs: each spelling of the row operations is tested on its own
// (HEADWISE_ISA caps only what the free functions pick).
std::vector<Isa> isas_here() {
    std::vector<Isa> isas;
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512})
        if (isa <= fast::widest_fast_isa()) isas.push_back(isa);
    return isas;
}

}  // namespace

TEST_CASE("row_max: the largest entry wherever it sits, NaNs passed over as std::max_element does", "[softmax]") {
    for (Isa isa : isas_here()) {
        INFO(to_string(isa));
        const auto row_max = fast::row_ops(isa).row_max;
        for (std::size_t n : {1u, 7u, 8u, 9u, 15u, 16u, 17u, 33u, 100u}) {
            // first, middle, last (in the tail loop when n is not a multiple of the vector)
            for (std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
                std::vector<float> x(n, -1.0f);
                x[at] = 3.5f;
                INFO("n = " << n << ", max at " << at);
                CHECK(row_max(x.data(), n) == 3.5f);
            }
        }
        const float inf = std::numeric_limits<float>::infinity();
        std::vector<float> masked(40, -inf);
        CHECK(row_max(masked.data(), masked.size()) == -inf);
        std::vector<float> with_nan(40, 1.0f);
        with_nan[20] = std::nanf("");
        with_nan[33] = 2.0f;
        CHECK(row_max(with_nan.data(), with_nan.size()) == 2.0f);
    }
}

TEST_CASE("exp_shifted_sum: float-accurate exp over the softmax range, 0 below it, NaN kept", "[softmax]") {
    // x - 2 from -87 to +78 in small steps (an odd count, so every spelling's tail runs too);
    // below -87 the true result is a denormal or less, and exactly 0 is the promise.
    std::vector<float> x;
    for (float t = -85.0f; t <= 80.0f; t += 0.01317f) x.push_back(t);
    for (Isa isa : isas_here()) {
        INFO(to_string(isa));
        const auto exp_shifted_sum = fast::row_ops(isa).exp_shifted_sum;
        std::vector<float> y = x;
        const float sum = exp_shifted_sum(y.data(), y.size(), 2.0f);
        double worst = 0, expected_sum = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double want = std::exp(double(x[i] - 2.0f));  // the shift is applied in float, as it is in the code
            expected_sum += want;
            worst = std::max(worst, std::abs(double(y[i]) - want) / want);
        }
        CHECK(worst < 3e-7);
        CHECK(std::abs(double(sum) - expected_sum) / expected_sum < 1e-5);
        const float inf = std::numeric_limits<float>::infinity();
        std::vector<float> edge = {-inf, -100.0f, -88.5f, std::nanf(""), 0.0f};
        exp_shifted_sum(edge.data(), edge.size(), 0.0f);
        CHECK(edge[0] == 0.0f);
        CHECK(edge[1] == 0.0f);
        CHECK(edge[2] == 0.0f);
        CHECK(std::isnan(edge[3]));
        CHECK(edge[4] == 1.0f);
        // A short row's sum holds its own entries only (a vector's unused lanes add nothing).
        for (std::size_t n : {1u, 3u, 8u, 11u}) {
            std::vector<float> ones(n, 0.0f);
            INFO("n = " << n);
            CHECK(exp_shifted_sum(ones.data(), n, 0.0f) == float(n));
        }
    }
}

TEST_CASE("exp_shifted_rows: each row shifted by its own value, a row shifted by -inf all 0", "[softmax]") {
    const float inf = std::numeric_limits<float>::infinity();
    constexpr std::size_t n = 19;  // whole vectors and a tail
    const std::vector<float> shifts = {0.5f, -inf, -3.0f};
    std::vector<float> x(shifts.size() * n);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = -4.0f + 0.37f * float(i % n);
    x[2 * n + 5] = -inf;  // a masked key
    for (Isa isa : isas_here()) {
        std::vector<float> y = x;
        fast::row_ops(isa).exp_shifted_rows(y.data(), shifts.size(), n, shifts.data());
        for (std::size_t r = 0; r < shifts.size(); ++r)
            for (std::size_t i = 0; i < n; ++i) {
                INFO(to_string(isa) << ", row " << r << ", column " << i);
                const double want = r == 1 ? 0.0 : std::exp(double(x[r * n + i] - shifts[r]));
                CHECK(std::abs(double(y[r * n + i]) - want) <= 3e-7 * want);
            }
    }
}

TEST_CASE("softmax_backward_row: P = exp(S - L) and dS = P (dP - D) scale in one pass, 0 for a row with no key",
          "[softmax]") {
    const float inf = std::numeric_limits<float>::infinity();
    const float lse = 1.25f, d = 0.3f, scale = 0.125f;
    for (Isa isa : isas_here())
        for (std::size_t n : {1u, 8u, 13u, 35u}) {
            INFO(to_string(isa) << ", n = " << n);
            std::vector<float> s(n), dp(n);
            for (std::size_t j = 0; j < n; ++j) s[j] = -2.0f + 0.29f * float(j), dp[j] = 0.7f - 0.11f * float(j);
            s[0] = -inf;  // a masked key: weight 0, no gradient
            std::vector<float> p = s, ds = dp;
            fast::row_ops(isa).softmax_backward_row(p.data(), ds.data(), n, lse, d, scale);
            for (std::size_t j = 0; j < n; ++j) {
                const double want_p = std::exp(double(s[j]) - double(lse));
                const double want_ds = want_p * (double(dp[j]) - d) * scale;
                CHECK(std::abs(p[j] - want_p) <= 3e-7 * want_p);
                CHECK(std::abs(ds[j] - want_ds) <= 1e-6 * std::abs(want_ds) + 1e-12);
            }
            std::vector<float> none = s, none_ds = dp;  // the row saw no key: its L is -inf
            fast::row_ops(isa).softmax_backward_row(none.data(), none_ds.data(), n, -inf, d, scale);
            for (std::size_t j = 0; j < n; ++j) CHECK((none[j] == 0.0f && none_ds[j] == 0.0f));
        }
}
