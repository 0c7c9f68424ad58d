#include "headwise/fast/cpu_count.hpp"

#include "headwise/base/tensor.hpp"  // usage_error

#include <fmt/format.h>

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace headwise::fast {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

// A whole number filling all of `s` (after trimming), or nothing.
bool parse_integer(std::string_view s, long long& out) {
    s = trim(s);
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size() && !s.empty();
}

// ceil(quota / period) CPUs, or 0 when either is not a positive number.
std::size_t cpus_for(long long quota, long long period) {
    if (quota <= 0 || period <= 0) return 0;
    return static_cast<std::size_t>((quota + period - 1) / period);
}

// The file's text, or "" when it cannot be read.
std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return in ? text.str() : std::string();
}

// The smaller of two limits where 0 means none.
std::size_t tighter(std::size_t a, std::size_t b) {
    if (a == 0) return b;
    if (b == 0) return a;
    return std::min(a, b);
}

// The tightest limit that `limit_in(dir)` finds in `base / cgroup_path` and each of its parents up
// to `base`. When the process's path is not there (a container whose cgroup is mounted at its own
// root while /proc/self/cgroup still names the host's path), `base` alone is asked.
template <class LimitIn>
std::size_t walk_up(const std::filesystem::path& base, std::string_view cgroup_path, LimitIn limit_in) {
    std::filesystem::path rel = std::filesystem::path(std::string(trim(cgroup_path))).relative_path();
    std::size_t limit = 0;
    std::error_code ec;
    if (!std::filesystem::is_directory(base / rel, ec)) rel.clear();
    for (;;) {
        limit = tighter(limit, limit_in(base / rel));
        if (rel.empty()) break;
        rel = rel.parent_path();
    }
    return limit;
}

}  // namespace

std::size_t cpus_from_cpu_max(std::string_view cpu_max) {
    cpu_max = trim(cpu_max);
    const std::size_t space = cpu_max.find(' ');
    if (space == std::string_view::npos) return 0;
    long long quota = 0, period = 0;
    if (!parse_integer(cpu_max.substr(0, space), quota) || !parse_integer(cpu_max.substr(space + 1), period)) return 0;
    return cpus_for(quota, period);  // "max 100000" fails to parse above: no limit
}

std::size_t cpus_from_cfs(std::string_view quota_us, std::string_view period_us) {
    long long quota = 0, period = 0;
    if (!parse_integer(quota_us, quota) || !parse_integer(period_us, period)) return 0;
    return cpus_for(quota, period);  // -1: no limit
}

std::size_t cgroup_cpu_limit(std::string_view proc_self_cgroup, const std::filesystem::path& cgroup_root) {
    std::size_t limit = 0;
    // Lines "hierarchy-id:controllers:path"; v2's unified hierarchy is "0::path".
    std::istringstream lines{std::string(proc_self_cgroup)};
    for (std::string line; std::getline(lines, line);) {
        const std::size_t c1 = line.find(':'), c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
        if (c2 == std::string::npos) continue;
        const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
        const std::string_view path = std::string_view(line).substr(c2 + 1);
        if (controllers.empty()) {  // v2: cpu.max in the unified hierarchy (under unified/ on hybrid systems)
            std::error_code ec;
            const bool hybrid = std::filesystem::is_directory(cgroup_root / "unified", ec);
            limit = tighter(limit, walk_up(hybrid ? cgroup_root / "unified" : cgroup_root, path,
                                           [](const std::filesystem::path& dir) {
                                               return cpus_from_cpu_max(slurp(dir / "cpu.max"));
                                           }));
            continue;
        }
        // v1: the cpu controller, alone or with others ("cpu,cpuacct"), mounted under its own name
        // or, on most systems, also as "cpu" (a link).
        std::vector<std::string> names;
        for (std::size_t start = 0; start <= controllers.size();) {
            const std::size_t comma = std::min(controllers.find(',', start), controllers.size());
            names.push_back(controllers.substr(start, comma - start));
            start = comma + 1;
        }
        if (std::find(names.begin(), names.end(), "cpu") == names.end()) continue;
        for (const std::string& mount : {controllers, std::string("cpu")}) {
            std::error_code ec;
            if (!std::filesystem::is_directory(cgroup_root / mount, ec)) continue;
            limit = tighter(limit, walk_up(cgroup_root / mount, path, [](const std::filesystem::path& dir) {
                                return cpus_from_cfs(slurp(dir / "cpu.cfs_quota_us"), slurp(dir / "cpu.cfs_period_us"));
                            }));
            break;
        }
    }
    return limit;
}

std::size_t threads_from_env(const char* value) {
    if (value == nullptr || trim(value).empty()) return 0;
    long long n = 0;
    if (!parse_integer(value, n) || n < 1 || n > 1024)
        throw usage_error(fmt::format("HEADWISE_THREADS must be a whole number from 1 to 1024, got '{}'", value));
    return static_cast<std::size_t>(n);
}

std::size_t affinity_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
    // More CPUs than a cpu_set_t holds (1024): the host's count is the best left.
    return std::max(1u, std::thread::hardware_concurrency());
}

std::size_t machine_threads() {
    if (const std::size_t n = threads_from_env(std::getenv("HEADWISE_THREADS")); n != 0) return n;
    return std::max<std::size_t>(
        1, tighter(affinity_cpus(), cgroup_cpu_limit(slurp("/proc/self/cgroup"), "/sys/fs/cgroup")));
}

}  // namespace headwise::fast
