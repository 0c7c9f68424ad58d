// emulator/emulator.cpp -- the two ways a block's threads run: fibers (default) and std::threads.
//
// Blocks always run one after another: that is what lets `__shared__` be a plain function-local
// static (one block's tiles at a time) and what keeps 1024-thread blocks affordable on 2 cores.
#include "emulator/emulator.hpp"

#include <atomic>
#include <barrier>
#include <memory>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define HEADWISE_ASAN_FIBERS 1
#else
#define HEADWISE_ASAN_FIBERS 0
#endif

#if defined(__SANITIZE_THREAD__)
#define HEADWISE_TSAN 1
#else
#define HEADWISE_TSAN 0
#endif

namespace headwise::emulator {

const char* name(Schedule s) {
    switch (s) {
        case Schedule::fibers: return "fibers";
        case Schedule::fibers_reversed: return "fibers_reversed";
        case Schedule::threads: return "threads";
    }
    return "?";
}

namespace {

std::atomic<Schedule> g_default_schedule{HEADWISE_TSAN ? Schedule::threads : Schedule::fibers};

std::string str(dim3 d) {
    char text[48];
    std::snprintf(text, sizeof text, "(%u,%u,%u)", d.x, d.y, d.z);
    return text;
}

// "block (3,0,0) thread (17,0,0)": where a kernel went wrong, read from the thread_locals.
std::string here() { return "block " + str(blockIdx) + " thread " + str(threadIdx); }

// What every schedule shares about one launch.
struct Launch {
    Launch(dim3 g, dim3 b, detail::Entry e, const void* c)
        : grid(g), block(b), entry(e), call(c), threads(b.x * b.y * b.z), blocks(std::uint64_t(g.x) * g.y * g.z) {}

    dim3 grid, block;
    detail::Entry entry;
    const void* call;
    unsigned threads;       // per block
    std::uint64_t blocks;   // in the grid

    std::mutex error_mutex;
    std::string error;      // the first thing that went wrong
    std::atomic<bool> failed{false};

    void fail(const std::string& message) {
        const std::lock_guard lock(error_mutex);
        if (error.empty()) error = message;
        failed = true;
    }

    // x varies fastest, as in CUDA's linear thread and block numbering.
    static dim3 unflatten(std::uint64_t i, dim3 extent) {
        const auto x = static_cast<unsigned>(i % extent.x);
        const auto y = static_cast<unsigned>(i / extent.x % extent.y);
        const auto z = static_cast<unsigned>(i / extent.x / extent.y);
        return {x, y, z};
    }
    dim3 thread_index(unsigned t) const { return unflatten(t, block); }
    dim3 block_index(std::uint64_t b) const { return unflatten(b, grid); }

    // Runs the kernel body for the current thread, turning whatever it throws into the launch's error.
    void run_kernel() {
        try {
            entry(call);
        } catch (const std::exception& e) {
            fail(e.what());
        }
    }

    // Every thread of a block must pass the same number of barriers; on a GPU anything else hangs
    // or silently misbehaves.
    void check_barrier_counts(const std::vector<std::uint64_t>& counts, std::uint64_t block_number) {
        for (unsigned t = 1; t < counts.size(); ++t) {
            if (counts[t] != counts[0]) {
                fail("__syncthreads() reached " + std::to_string(counts[0]) + " times by thread " +
                     str(thread_index(0)) + " but " + std::to_string(counts[t]) + " times by thread " +
                     str(thread_index(t)) + " of block " + str(block_index(block_number)) +
                     ": every thread of a block must reach every barrier (is one inside an if?)");
                return;
            }
        }
    }
};

// The emulated thread currently running on this OS thread: what __syncthreads() talks to.
struct Worker {
    virtual void sync() = 0;

protected:
    ~Worker() = default;
};
thread_local Worker* tl_worker = nullptr;

void validate(dim3 grid, dim3 block) {
    const auto bad = [&](const std::string& why) {
        throw launch_error("invalid launch configuration: grid " + str(grid) + " block " + str(block) + ": " + why);
    };
    if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
        bad("every dimension must be at least 1");
    if (block.x > 1024 || block.y > 1024 || block.z > 64) bad("block dimensions are limited to (1024, 1024, 64)");
    if (std::uint64_t(block.x) * block.y * block.z > 1024) bad("at most 1024 threads per block");
    if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) bad("grid dimensions are limited to (2^31-1, 65535, 65535)");
}

// ---------------------------------------------------------------------------------------------
// Fibers: every CUDA thread of the block gets a ucontext with its own stack. A fiber runs until it
// calls __syncthreads() (or returns); when every fiber has, the barrier opens and the next round
// starts. One OS thread does it all, so a barrier costs two context switches per CUDA thread.

class FiberStack {
public:
    explicit FiberStack(std::size_t size) : size_(size) {
        const std::size_t guard = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        void* p = mmap(nullptr, size_ + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw launch_error("emulator: cannot map a fiber stack");
        mprotect(p, guard, PROT_NONE);  // an overflowing kernel faults instead of scribbling
        base_ = static_cast<char*>(p);
        guard_ = guard;
    }
    FiberStack(const FiberStack&) = delete;
    FiberStack& operator=(const FiberStack&) = delete;
    ~FiberStack() { munmap(base_, size_ + guard_); }
    void* bottom() const { return base_ + guard_; }
    std::size_t size() const { return size_; }

private:
    char* base_ = nullptr;
    std::size_t size_, guard_ = 0;
};

class FiberBlock final : public Worker {
public:
    FiberBlock(Launch& launch, bool reversed) : launch_(launch), reversed_(reversed) {
        // Kernels keep their per-thread arrays (a query row, an accumulator) on this stack.
        const std::size_t stack = HEADWISE_ASAN_FIBERS ? 512 * 1024 : 128 * 1024;
        fibers_.reserve(launch.threads);
        for (unsigned t = 0; t < launch.threads; ++t) fibers_.push_back(std::make_unique<Fiber>(stack, launch.thread_index(t)));
    }

    std::uint64_t barriers() const { return barriers_; }

    // Runs one block to the end; returns false when a thread failed (the launch has the message).
    bool run(std::uint64_t block_number) {
        for (auto& fiber : fibers_) {
            Fiber& f = *fiber;
            getcontext(&f.context);
            f.context.uc_stack.ss_sp = f.stack.bottom();
            f.context.uc_stack.ss_size = f.stack.size();
            f.context.uc_link = nullptr;
            makecontext(&f.context, &FiberBlock::entry, 0);
            f.state = State::ready;
            f.barriers = 0;
        }
        for (;;) {
            for (unsigned n = 0; n < fibers_.size(); ++n) {
                Fiber& f = *fibers_[reversed_ ? fibers_.size() - 1 - n : n];
                if (f.state != State::ready) continue;
                threadIdx = f.index;
                resume(f);
                if (f.state == State::failed) return false;
            }
            bool any_waiting = false;
            for (auto& f : fibers_) {
                if (f->state == State::waiting) f->state = State::ready, any_waiting = true;
            }
            if (!any_waiting) break;
            ++barriers_;
        }
        std::vector<std::uint64_t> counts;
        for (const auto& f : fibers_) counts.push_back(f->barriers);
        launch_.check_barrier_counts(counts, block_number);
        return !launch_.failed;
    }

    void sync() override {
        ++current_->barriers;
        current_->state = State::waiting;
        suspend(*current_, false);
    }

private:
    enum class State { ready, waiting, done, failed };
    struct Fiber {
        Fiber(std::size_t stack_size, dim3 idx) : stack(stack_size), index(idx) {}
        FiberStack stack;
        dim3 index;
        ucontext_t context{};
        State state = State::ready;
        std::uint64_t barriers = 0;
    };

    static thread_local FiberBlock* running_;

    static void entry() {
        FiberBlock& self = *running_;
        self.arrived_on_fiber();
        Fiber& f = *self.current_;
        self.launch_.run_kernel();
        f.state = self.launch_.failed ? State::failed : State::done;
        self.suspend(f, true);  // never resumed
    }

    void resume(Fiber& f) {
        current_ = &f;
        running_ = this;
        Worker* outer = tl_worker;
        tl_worker = this;
#if HEADWISE_ASAN_FIBERS
        void* fake_stack = nullptr;
        __sanitizer_start_switch_fiber(&fake_stack, f.stack.bottom(), f.stack.size());
#endif
        swapcontext(&scheduler_, &f.context);
#if HEADWISE_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
        tl_worker = outer;
    }

    void suspend(Fiber& f, [[maybe_unused]] bool finished) {
#if HEADWISE_ASAN_FIBERS
        void* fake_stack = nullptr;
        __sanitizer_start_switch_fiber(finished ? nullptr : &fake_stack, scheduler_bottom_, scheduler_size_);
#endif
        swapcontext(&f.context, &scheduler_);
#if HEADWISE_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(fake_stack, &scheduler_bottom_, &scheduler_size_);
#endif
    }

    void arrived_on_fiber() {
#if HEADWISE_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(nullptr, &scheduler_bottom_, &scheduler_size_);
#endif
    }

    Launch& launch_;
    bool reversed_;
    std::vector<std::unique_ptr<Fiber>> fibers_;
    ucontext_t scheduler_{};
    Fiber* current_ = nullptr;
    std::uint64_t barriers_ = 0;
    [[maybe_unused]] const void* scheduler_bottom_ = nullptr;
    [[maybe_unused]] std::size_t scheduler_size_ = 0;
};

thread_local FiberBlock* FiberBlock::running_ = nullptr;

LaunchStats run_fibers(Launch& launch, bool reversed) {
#if HEADWISE_TSAN
    (void)launch, (void)reversed;
    throw launch_error("the fiber schedules do not run under ThreadSanitizer; use Schedule::threads");
#else
    const Traffic before = detail::traffic;
    const dim3 saved_thread = threadIdx, saved_block = blockIdx, saved_dim = blockDim, saved_grid = gridDim;
    blockDim = launch.block;
    gridDim = launch.grid;
    FiberBlock block(launch, reversed);
    for (std::uint64_t b = 0; b < launch.blocks; ++b) {
        blockIdx = launch.block_index(b);
        if (!block.run(b)) break;
    }
    threadIdx = saved_thread, blockIdx = saved_block, blockDim = saved_dim, gridDim = saved_grid;

    LaunchStats stats;
    stats.traffic.loads = detail::traffic.loads - before.loads;
    stats.traffic.stores = detail::traffic.stores - before.stores;
    stats.traffic.load_bytes = detail::traffic.load_bytes - before.load_bytes;
    stats.traffic.store_bytes = detail::traffic.store_bytes - before.store_bytes;
    detail::traffic = before;
    stats.barriers = block.barriers();
    return stats;
#endif
}

// ---------------------------------------------------------------------------------------------
// Threads: one std::thread per CUDA thread of a block, kept for the whole launch. Inside a block
// __syncthreads() is a std::barrier; between blocks a second barrier lets one thread check the
// block and set up the next one while the others wait.

class ThreadWorker final : public Worker {
public:
    ThreadWorker(std::optional<std::barrier<>>& block_barrier, std::uint64_t& count)
        : block_barrier_(block_barrier), count_(count) {}
    void sync() override {
        ++count_;
        block_barrier_->arrive_and_wait();
    }

private:
    std::optional<std::barrier<>>& block_barrier_;
    std::uint64_t& count_;
};

LaunchStats run_threads(Launch& launch) {
    const unsigned n = launch.threads;
    std::vector<std::uint64_t> counts(n, 0);
    std::uint64_t block = 0;
    std::uint64_t barriers = 0;
    bool stop = false;
    std::optional<std::barrier<>> in_block;
    in_block.emplace(n);

    // Runs on one thread while all others wait between blocks.
    auto between_blocks = [&]() noexcept {
        launch.check_barrier_counts(counts, block);
        for (std::uint64_t& c : counts) barriers += c, c = 0;
        ++block;
        stop = block == launch.blocks || launch.failed;
        if (!stop) in_block.emplace(n);
    };
    std::barrier between(n, between_blocks);

    std::mutex total_mutex;
    Traffic total;
    auto work = [&](unsigned t) {
        ThreadWorker me(in_block, counts[t]);
        tl_worker = &me;
        detail::traffic = {};
        blockDim = launch.block;
        gridDim = launch.grid;
        threadIdx = launch.thread_index(t);
        for (;;) {
            blockIdx = launch.block_index(block);
            launch.run_kernel();
            in_block->arrive_and_drop();  // a finished thread no longer holds the others back
            between.arrive_and_wait();
            if (stop) break;
        }
        const std::lock_guard lock(total_mutex);
        total += detail::traffic;
        tl_worker = nullptr;
    };
    std::vector<std::thread> pool;
    pool.reserve(n);
    try {
        for (unsigned t = 0; t < n; ++t) pool.emplace_back(work, t);
    } catch (const std::system_error&) {
        std::fprintf(stderr, "emulator: could not start %u threads for one block\n", n);
        std::abort();  // the threads already started wait on a barrier that can never fill
    }
    for (std::thread& th : pool) th.join();

    LaunchStats stats;
    stats.traffic = total;
    stats.barriers = barriers / n;
    return stats;
}

std::mutex g_launch_mutex;  // __shared__ statics hold one block at a time, in the whole process

}  // namespace

Schedule default_schedule() { return g_default_schedule; }
void set_default_schedule(Schedule s) { g_default_schedule = s; }

namespace detail {

void sync_block() {
    if (tl_worker == nullptr) throw launch_error("__syncthreads() called outside a kernel launch");
    tl_worker->sync();
}

void out_of_bounds(bool read_only, std::ptrdiff_t index, std::size_t size) {
    throw launch_error(std::string("global memory ") + (read_only ? "load" : "access") + " out of bounds: index " +
                       std::to_string(index) + " of a " + std::to_string(size) + "-element buffer, in " + here());
}

void bad_slice(std::size_t offset, std::size_t count, std::size_t size) {
    throw launch_error("global pointer arithmetic out of bounds: elements [" + std::to_string(offset) + ", " +
                       std::to_string(offset + count) + ") of a " + std::to_string(size) + "-element buffer, in " +
                       here());
}

LaunchStats run(dim3 grid, dim3 block, Schedule schedule, Entry entry, const void* call) {
    validate(grid, block);
    std::unique_lock lock(g_launch_mutex, std::try_to_lock);
    if (!lock.owns_lock()) {
        if (tl_worker != nullptr) throw launch_error("a kernel cannot launch another kernel in the emulator");
        lock.lock();
    }
    Launch launch(grid, block, entry, call);
    LaunchStats stats = schedule == Schedule::threads ? run_threads(launch)
                                                      : run_fibers(launch, schedule == Schedule::fibers_reversed);
    if (launch.failed) throw launch_error(launch.error);
    stats.blocks = launch.blocks;
    stats.threads_per_block = launch.threads;
    return stats;
}

}  // namespace detail

}  // namespace headwise::emulator
