#include "headwise/fast/cpu_count.hpp"
#include "headwise/fast/parallel.hpp"

#include "headwise/base/tensor.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>

using namespace headwise;

namespace {

const std::filesystem::path samples = std::filesystem::path(HEADWISE_FIXTURES_DIR) / "cgroup";

// The quota of the sample machine in tests/fixtures/cgroup/<name> (0: none).
std::size_t sample_limit(const std::string& name) {
    std::ifstream in(samples / name / "proc_self_cgroup");
    std::ostringstream text;
    text << in.rdbuf();
    REQUIRE(!text.str().empty());
    return fast::cgroup_cpu_limit(text.str(), samples / name / "root");
}

}  // namespace

TEST_CASE("cpu_count: cgroup v2 cpu.max gives its CPUs rounded up, 'max' gives no limit", "[cpu_count]") {
    CHECK(fast::cpus_from_cpu_max("200000 100000\n") == 2);
    CHECK(fast::cpus_from_cpu_max("150000 100000") == 2);
    CHECK(fast::cpus_from_cpu_max("50000 100000") == 1);
    CHECK(fast::cpus_from_cpu_max("max 100000\n") == 0);
    CHECK(fast::cpus_from_cpu_max("") == 0);
    CHECK(fast::cpus_from_cpu_max("200000") == 0);
    CHECK(fast::cpus_from_cpu_max("-5 100000") == 0);
}

TEST_CASE("cpu_count: cgroup v1 cfs quota over period, -1 for no limit", "[cpu_count]") {
    CHECK(fast::cpus_from_cfs("400000\n", "100000\n") == 4);
    CHECK(fast::cpus_from_cfs("100001", "100000") == 2);
    CHECK(fast::cpus_from_cfs("-1\n", "100000\n") == 0);
    CHECK(fast::cpus_from_cfs("", "") == 0);
    CHECK(fast::cpus_from_cfs("100000", "0") == 0);
}

TEST_CASE("cpu_count: the sample cgroup trees give the tightest quota from the process's cgroup up", "[cpu_count]") {
    CHECK(sample_limit("v2") == 2);            // app.scope allows 3.5 CPUs, its parent user.slice 2
    CHECK(sample_limit("v2-max") == 0);        // "max"
    CHECK(sample_limit("v1") == 2);            // 1.5 CPUs for /docker/abc, the root -1
    CHECK(sample_limit("v1-container") == 4);  // the host's path is not mounted: the container's root
    CHECK(sample_limit("v1-unlimited") == 0);  // -1
    CHECK(fast::cgroup_cpu_limit("", samples / "v2" / "root") == 0);
    CHECK(fast::cgroup_cpu_limit("garbage without colons\n", samples / "v2" / "root") == 0);
    CHECK(fast::cgroup_cpu_limit("0::/user.slice\n", samples / "no-such-tree") == 0);
}

TEST_CASE("cpu_count: HEADWISE_THREADS is a whole number from 1 to 1024, anything else a usage error", "[cpu_count]") {
    CHECK(fast::threads_from_env(nullptr) == 0);
    CHECK(fast::threads_from_env("") == 0);
    CHECK(fast::threads_from_env("3") == 3);
    CHECK(fast::threads_from_env(" 16\n") == 16);
    CHECK(fast::threads_from_env("1024") == 1024);
    for (const char* bad : {"0", "-2", "two", "4x", "1025", "99999999999999999999", "2.5"}) {
        INFO("HEADWISE_THREADS=" << bad);
        CHECK_THROWS_AS(fast::threads_from_env(bad), usage_error);
    }
    CHECK_THROWS_WITH(fast::threads_from_env("two"), Catch::Contains("HEADWISE_THREADS") && Catch::Contains("'two'"));
}

TEST_CASE("cpu_count: the worker count is within the affinity mask when nothing overrides it", "[cpu_count]") {
    if (std::getenv("HEADWISE_THREADS") != nullptr) return;  // the override is tested under taskset below
    CHECK(fast::worker_count() >= 1);
    CHECK(fast::worker_count() <= fast::affinity_cpus());
}

// Run by ctest under `taskset -c 0` (tests/CMakeLists.txt), hidden from a plain run.
TEST_CASE("cpu_count: under taskset -c 0 there is one worker and every task runs on it", "[.one-cpu]") {
    REQUIRE(std::getenv("HEADWISE_THREADS") == nullptr);
    CHECK(fast::affinity_cpus() == 1);
    CHECK(fast::worker_count() == 1);
    std::atomic<std::size_t> off_worker_zero{0};
    fast::parallel_for(64, [&](std::size_t, std::size_t worker) { off_worker_zero += worker != 0; });
    CHECK(off_worker_zero == 0);
}

// Run by ctest under `taskset -c 0` with HEADWISE_THREADS=3: the override wins over the mask.
TEST_CASE("cpu_count: HEADWISE_THREADS=3 gives three workers even on one CPU", "[.three-threads]") {
    CHECK(fast::affinity_cpus() == 1);
    CHECK(fast::worker_count() == 3);
}
