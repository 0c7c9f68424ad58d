// headwise/fast/team.hpp -- threads that stay, for work split a hundred times a millisecond.
//
// parallel_for (parallel.hpp) starts its threads on every call: ~50-100 us, nothing next to a
// forward pass of attention, everything next to a decoder's token, which is ~120 matrix-vector
// products of 5-50 us each. A Team starts its threads once; each run() wakes them (they spin on an
// atomic counter for a moment before they sleep), hands out the indices, and returns when every
// index is done. The caller is one of the team, as in parallel_for.
//
// One run at a time per team (run() is not re-entrant); tasks must not throw.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace headwise::fast {

class Team {
public:
    // `threads` = 0: worker_count() (the machine's CPUs, HEADWISE_THREADS).
    explicit Team(std::size_t threads = 0);
    ~Team();
    Team(const Team&) = delete;
    Team& operator=(const Team&) = delete;

    std::size_t size() const { return workers_.size() + 1; }

    // task(i, member) for every i in [0, count), member in [0, size()) naming the thread.
    void run(std::size_t count, const std::function<void(std::size_t index, std::size_t member)>& task);

private:
    void serve(std::size_t member);
    void work(std::size_t member);

    std::vector<std::thread> workers_;
    const std::function<void(std::size_t, std::size_t)>* task_ = nullptr;
    // The run's ticket: (run number << 40) | (count << 20) | next index. A worker takes an index by
    // compare-and-swap on the whole word, so an index of an old run can never be taken in a new one.
    std::atomic<std::uint64_t> ticket_{0};
    std::atomic<std::size_t> done_{0};          // tasks of the current run finished
    std::atomic<std::uint32_t> generation_{0};  // bumped by every run (and by the destructor): the wake-up
    std::uint64_t runs_ = 0;
    std::atomic<bool> stop_{false};
};

}  // namespace headwise::fast
