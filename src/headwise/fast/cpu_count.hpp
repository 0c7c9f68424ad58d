// headwise/fast/cpu_count.hpp -- how many threads the machine actually gives this process.
//
// std::thread::hardware_concurrency counts the host's CPUs. Under `taskset -c 0`, or in a
// container held to 2 CPUs on a 64-core host, that is one thread per CPU the process may never
// run on: they queue behind each other and every hand-over waits. The count here is the CPUs in
// the affinity mask (sched_getaffinity), capped by the cgroup's CPU quota (v2 cpu.max, v1
// cpu.cfs_quota_us / cpu.cfs_period_us, from the process's cgroup up to the root), and the
// environment variable HEADWISE_THREADS overrides both.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

namespace headwise::fast {

// The CPUs a cgroup v2 `cpu.max` ("quota period", e.g. "200000 100000") allows, rounded up (a
// quota of 1.5 CPUs gives 2 threads, as the JVM counts); 0 for "max" (no limit) or text that is
// not a quota.
std::size_t cpus_from_cpu_max(std::string_view cpu_max);

// The same for cgroup v1: cpu.cfs_quota_us (-1: no limit) and cpu.cfs_period_us.
std::size_t cpus_from_cfs(std::string_view quota_us, std::string_view period_us);

// The quota of the cgroup this process is in, read from `proc_self_cgroup` (the text of
// /proc/self/cgroup) and the cgroup file system mounted at `cgroup_root` (/sys/fs/cgroup): the
// smallest limit from the process's own cgroup up to the root, in CPUs; 0 when nothing limits it.
std::size_t cgroup_cpu_limit(std::string_view proc_self_cgroup, const std::filesystem::path& cgroup_root);

// HEADWISE_THREADS's value: 0 when unset or empty; throws usage_error unless it is a whole number
// from 1 to 1024.
std::size_t threads_from_env(const char* value);

// The CPUs in this process's affinity mask (at least 1).
std::size_t affinity_cpus();

// HEADWISE_THREADS when set, otherwise the affinity mask's CPUs capped by the cgroup quota.
std::size_t machine_threads();

}  // namespace headwise::fast
