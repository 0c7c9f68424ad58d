// The decoder's persistent threads (fast/team.hpp): every index once, run after run.
#include "headwise/fast/team.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

using namespace headwise;

TEST_CASE("team: every index runs exactly once, on a member in range, over many runs", "[team]") {
    for (std::size_t threads : {1u, 2u, 3u}) {
        fast::Team team(threads);
        CHECK(team.size() == threads);
        for (int run = 0; run < 200; ++run) {  // wake-ups after spinning and after sleeping
            const std::size_t count = std::size_t(run % 7) * 13;
            std::vector<std::atomic<int>> ran(count);
            std::atomic<bool> in_range{true};
            team.run(count, [&](std::size_t i, std::size_t member) {
                ++ran[i];
                if (member >= threads) in_range = false;
            });
            for (auto& r : ran) REQUIRE(r == 1);
            REQUIRE(in_range);
        }
    }
}

TEST_CASE("team: a run returns only after every task has finished", "[team]") {
    fast::Team team(2);
    std::atomic<int> done{0};
    team.run(64, [&](std::size_t, std::size_t) {
        volatile double x = 0;
        for (int i = 0; i < 20000; ++i) x = x + 1.0;
        ++done;
    });
    CHECK(done == 64);
}
