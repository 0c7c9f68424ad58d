#include "headwise/fast/team.hpp"

#include "headwise/fast/parallel.hpp"

#include <sched.h>

#include <stdexcept>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace headwise::fast {

namespace {

// How long a worker spins on the counter before it sleeps (~1-2 ms of pause instructions): a
// decoder's next product comes after the attention of a layer, ~100 us later, and a thread that
// fell asleep in between takes ~50 us to wake, by when the caller has done most of the tasks alone.
constexpr int spin_rounds = 50000;

constexpr std::uint64_t field = (std::uint64_t{1} << 20) - 1;

inline void relax() {
#if defined(__x86_64__)
    _mm_pause();
#endif
}

}  // namespace

Team::Team(std::size_t threads) {
    if (threads == 0) threads = worker_count();
    for (std::size_t m = 1; m < threads; ++m) workers_.emplace_back([this, m] { serve(m); });
}

Team::~Team() {
    stop_ = true;
    generation_.fetch_add(1);
    generation_.notify_all();
    for (auto& t : workers_) t.join();
}

// Takes indices of the current run until there are none: the ticket names the run, its count and
// the next index, so an index is taken only while its run is still the current one.
void Team::work(std::size_t member) {
    std::uint64_t ticket = ticket_.load(std::memory_order_acquire);
    for (;;) {
        const std::uint64_t index = ticket & field, count = (ticket >> 20) & field;
        if (index >= count) return;
        if (!ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel)) continue;
        (*task_)(index, member);
        done_.fetch_add(1, std::memory_order_acq_rel);
        ticket = ticket_.load(std::memory_order_acquire);
    }
}

void Team::serve(std::size_t member) {
    std::uint32_t seen = 0;
    for (;;) {
        std::uint32_t now = generation_.load(std::memory_order_acquire);
        for (int spin = 0; now == seen && spin < spin_rounds; ++spin) {
            relax();
            now = generation_.load(std::memory_order_acquire);
        }
        if (now == seen) {
            generation_.wait(seen);
            now = generation_.load(std::memory_order_acquire);
        }
        seen = now;
        if (stop_) return;
        work(member);
    }
}

void Team::run(std::size_t count, const std::function<void(std::size_t, std::size_t)>& task) {
    if (workers_.empty() || count <= 1) {
        for (std::size_t i = 0; i < count; ++i) task(i, 0);
        return;
    }
    if (count > field) throw std::length_error("Team::run: more than 2^20 tasks");
    task_ = &task;
    done_.store(0, std::memory_order_relaxed);
    ++runs_;
    ticket_.store((runs_ << 40) | (std::uint64_t(count) << 20), std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    work(0);
    // Only tasks already taken are waited for; after a while the core is offered to their thread.
    for (int spin = 0; done_.load(std::memory_order_acquire) != count; ++spin) {
        if (spin < 2000)
            relax();
        else
            sched_yield();
    }
}

}  // namespace headwise::fast
