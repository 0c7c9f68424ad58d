#include "headwise/fast/blas.hpp"
#include "headwise/fast/parallel.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace headwise;

TEST_CASE("parallel_for: every index runs exactly once, on a worker in range", "[parallel]") {
    for (std::size_t count : {0u, 1u, 2u, 3u, 1000u}) {
        std::vector<std::atomic<int>> runs(count);
        std::atomic<bool> worker_in_range{true};
        fast::parallel_for(count, [&](std::size_t i, std::size_t worker) {
            ++runs[i];
            if (worker >= fast::worker_count()) worker_in_range = false;
        });
        INFO("count = " << count);
        for (auto& r : runs) CHECK(r == 1);
        CHECK(worker_in_range);
    }
}

TEST_CASE("parallel_for: a task's exception reaches the caller and the others stop", "[parallel]") {
    // Every task takes 20 us: were the others not stopped they would run for 2 s; stopped, they run
    // on only while the throwing worker is descheduled (a few ms on a loaded machine, ~100 tasks).
    // Instant tasks made this flaky: the other worker could take all 100000 in that time.
    std::atomic<std::size_t> ran{0};
    CHECK_THROWS_WITH(fast::parallel_for(100000,
                                         [&](std::size_t i, std::size_t) {
                                             ++ran;
                                             if (i == 10) throw std::runtime_error("tile 10 failed");
                                             std::this_thread::sleep_for(std::chrono::microseconds(20));
                                         }),
                      "tile 10 failed");
    CHECK(ran < 100000);
}

TEST_CASE("parallel_for: OpenBLAS gets its own thread count back afterwards", "[parallel]") {
    const int before = blas::threads();
    std::atomic<bool> single_inside{true};  // Catch2's CHECK is not thread-safe: check on this thread
    fast::parallel_for(8, [&](std::size_t, std::size_t) {
        if (blas::threads() != 1) single_inside = false;
    });
    CHECK(single_inside);
    CHECK(blas::threads() == before);
    CHECK_THROWS(fast::parallel_for(8, [](std::size_t, std::size_t) { throw std::runtime_error("x"); }));
    CHECK(blas::threads() == before);
}

TEST_CASE("parallel_for: callers on several threads at once still leave OpenBLAS's count as it was", "[parallel]") {
    const int before = blas::threads();
    std::atomic<bool> single_inside{true};
    auto caller = [&] {
        for (int round = 0; round < 200; ++round)
            fast::parallel_for(4, [&](std::size_t, std::size_t) {
                if (blas::threads() != 1) single_inside = false;
            });
    };
    { std::jthread a(caller), b(caller), c(caller); }
    CHECK(single_inside);
    CHECK(blas::threads() == before);
}

TEST_CASE("linear_rows: row panels give x . W^T + b, also for a row count no core count divides", "[parallel]") {
    // 1001 x 96 . (480 x 96)^T is 46M multiply-adds: above the threshold where it is split.
    const std::size_t rows = 1001, in = 96, out = 480;
    std::vector<float> x(rows * in), w(out * in), b(out), y(rows * out, std::nanf(""));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 53) % 89) / 89.0f - 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) * 0.01f;
    fast::linear_rows(x.data(), rows, in, w.data(), out, b.data(), y.data());
    double worst = 0;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < out; ++o) {
            double expected = b[o];
            for (std::size_t c = 0; c < in; ++c) expected += double(x[r * in + c]) * double(w[o * in + c]);
            worst = std::max(worst, std::abs(expected - double(y[r * out + o])));  // a NaN left behind fails below
            if (std::isnan(y[r * out + o])) worst = std::numeric_limits<double>::infinity();
        }
    CHECK(worst < 1e-4);
}
