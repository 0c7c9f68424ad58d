// bench/bench_common.hpp -- what every benchmark program measures with: process CPU time (what
// a busy, shared machine distorts least), the median of repeated runs, and the thread count it
// will use (a bad HEADWISE_THREADS is one line and exit code 2, as in every headwise program).
#pragma once

#include "headwise/base/tensor.hpp"
#include "headwise/fast/parallel.hpp"

#include <fmt/format.h>

#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace headwise::bench {

// Seconds of CPU the whole process (every thread) has used so far.
inline double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// The library's worker count; exits with code 2 and one line naming `program` when
// HEADWISE_THREADS is not a count.
inline std::size_t worker_count_or_exit(const char* program) {
    try {
        return fast::worker_count();
    } catch (const usage_error& e) {
        fmt::print(stderr, "{}: {}\n", program, e.what());
        std::exit(2);
    }
}

}  // namespace headwise::bench
