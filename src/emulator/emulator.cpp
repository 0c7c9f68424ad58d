// emulator/emulator.cpp -- the two ways a block's threads run: fibers (default) and std::threads.
//
// Blocks always run one after another: that is what lets `__shared__` be a plain function-local
// static (one block's tiles at a time) and what keeps 1024-thread blocks affordable on 2 cores.
#include "emulator/emulator.hpp"

#include "headwise/base/names.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <cstdio>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

// Sanitizers: GCC says so with __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang with __has_feature.
// HEADWISE_EMULATOR_ASAN_FIBERS: this file itself is not instrumented, but the kernels it runs are
// (grade builds, tests/grade/CMakeLists.txt), so it must still tell AddressSanitizer about every
// switch between fiber stacks.
#if defined(__SANITIZE_ADDRESS__) || defined(HEADWISE_EMULATOR_ASAN_FIBERS)
#define HEADWISE_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEADWISE_ASAN_FIBERS 1
#endif
#endif
#ifndef HEADWISE_ASAN_FIBERS
#define HEADWISE_ASAN_FIBERS 0
#endif
#if HEADWISE_ASAN_FIBERS
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__SANITIZE_THREAD__)
#define HEADWISE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HEADWISE_TSAN 1
#endif
#endif
#ifndef HEADWISE_TSAN
#define HEADWISE_TSAN 0
#endif

namespace headwise::emulator {

const char* name(Schedule s) {
    // string literals, so each name's data() ends in its NUL
    static constexpr Named<Schedule> names[] = {
        {Schedule::fibers, "fibers"}, {Schedule::fibers_reversed, "fibers_reversed"}, {Schedule::threads, "threads"}};
    return name_in(names, s).data();
}

namespace {

std::atomic<Schedule> g_default_schedule{HEADWISE_TSAN ? Schedule::threads : Schedule::fibers};
std::atomic<bool> g_bank_model{true};

std::string str(dim3 d) {
    char text[48];
    std::snprintf(text, sizeof text, "(%u,%u,%u)", d.x, d.y, d.z);
    return text;
}

// "block (3,0,0) thread (17,0,0)": where a kernel went wrong, read from the thread_locals.
std::string here() { return "block " + str(blockIdx) + " thread " + str(threadIdx); }

// "attention.cuh:57": where in a kernel, without the directories.
std::string site(const std::source_location& where) {
    std::string file = where.file_name();
    const std::size_t slash = file.find_last_of('/');
    if (slash != std::string::npos) file = file.substr(slash + 1);
    return file + ":" + std::to_string(where.line());
}

std::string hex(unsigned mask) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", mask);
    return text;
}

// What every schedule shares about one launch.
struct Launch {
    Launch(dim3 g, dim3 b, machine::Entry e, const void* c)
        : grid(g), block(b), entry(e), call(c), threads(b.x * b.y * b.z), blocks(std::uint64_t(g.x) * g.y * g.z) {}

    dim3 grid, block;
    machine::Entry entry;
    const void* call;
    unsigned threads;      // per block
    std::uint64_t blocks;  // in the grid

    std::mutex error_mutex;
    std::string error;  // the first thing that went wrong
    // When that was a launch_error thrown inside the kernel (an index out of bounds, a race): the
    // exception itself, rethrown to the caller as it is, so that whoever looks at where it was
    // thrown (a debugger, the grader's __cxa_throw hook) sees the kernel line, not this file.
    std::exception_ptr kernel_error;
    std::atomic<bool> failed{false};

    void fail(const std::string& message, std::exception_ptr thrown = nullptr) {
        const std::lock_guard lock(error_mutex);
        if (error.empty()) error = message, kernel_error = std::move(thrown);
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
        } catch (const launch_error& e) {
            fail(e.what(), std::current_exception());
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
    virtual void sync(const std::source_location& where) = 0;
    virtual machine::WarpResult warp(const machine::WarpCall& call) = 0;
    virtual machine::WarpScratch& scratch() = 0;
    virtual void shared(const std::source_location& where, std::uint32_t word) = 0;
    virtual void shared_request(const std::uint32_t* words, unsigned count, unsigned lanes) = 0;
    virtual machine::AsyncState& async() = 0;
    // Where the calling thread stands, for the race check; epoch 0: not checked (threads schedule).
    struct Moment {
        std::uint64_t epoch = 0, seq = 0;
        std::uint32_t thread = 0;
    };
    virtual Moment now() = 0;
    virtual std::string thread_name(std::uint32_t linear) = 0;

protected:
    ~Worker() = default;
};
thread_local Worker* tl_worker = nullptr;

// The wavefronts one warp request takes: 32 banks of 4-byte words, one word per bank per
// wavefront, lanes asking for the same word share it.
int wavefronts(const std::uint32_t* words, unsigned count) {
    std::uint32_t seen[32][32];
    int per_bank[32] = {};
    int worst = 0;
    for (unsigned n = 0; n < count; ++n) {
        const std::uint32_t word = words[n], bank = word % 32;
        bool known = false;
        for (int e = 0; e < per_bank[bank] && !known; ++e) known = seen[bank][e] == word;
        if (!known && per_bank[bank] < 32) seen[bank][per_bank[bank]++] = word, worst = std::max(worst, per_bank[bank]);
    }
    return worst;
}

void validate(dim3 grid, dim3 block) {
    const auto bad = [&](const std::string& why) {
        throw launch_error("invalid launch configuration: grid " + str(grid) + " block " + str(block) + ": " + why);
    };
    if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
        bad("every dimension must be at least 1");
    if (block.x > 1024 || block.y > 1024 || block.z > 64) bad("block dimensions are limited to (1024, 1024, 64)");
    if (std::uint64_t(block.x) * block.y * block.z > 1024) bad("at most 1024 threads per block");
    if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
        bad("grid dimensions are limited to (2^31-1, 65535, 65535)");
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
    ~FiberStack() {
        clean();  // the next mapping at this address starts with no stale poison
        munmap(base_, size_ + guard_);
    }
    void* bottom() const { return base_ + guard_; }
    // Under ASan: forget the redzones of frames an exception unwound (or a jump left) on this
    // stack, as ASan's own swapcontext would; a fiber starts on a clean stack.
    void clean() {
#if HEADWISE_ASAN_FIBERS
        __asan_unpoison_memory_region(bottom(), size_);
#endif
        left_cleanly_ = false;
    }
    // Before a fiber starts on it: the whole stack after a fiber that did not return (a thread that
    // failed, or one left waiting when its block failed); after one that returned, only its top,
    // where the fiber's entry frame stayed. Its kernel's frames returned, and returning unpoisons
    // a frame; unpoisoning all 512 KiB for every fiber of every block made ASan hand the shadow
    // pages back and fault them in again (a third of exercise 06's grading time).
    void prepare() {
        if (!left_cleanly_) return clean();
#if HEADWISE_ASAN_FIBERS
        constexpr std::size_t top = 16 * 1024;
        __asan_unpoison_memory_region(base_ + guard_ + size_ - top, top);
#endif
        left_cleanly_ = false;
    }
    // Its fiber returned from its kernel (called on the scheduler's stack, after the block).
    void returned() { left_cleanly_ = true; }
    std::size_t size() const { return size_; }

private:
    char* base_ = nullptr;
    std::size_t size_, guard_ = 0;
    bool left_cleanly_ = false;  // a fresh mapping may share an address with an earlier one's poison
};

// The stacks a thread's launches have finished with, taken back by its next launch: a mapping per
// fiber per launch made every launch fault in again each page its kernel touches (graders launch
// thousands of times: ~40% of exercise 06's grading time was the kernel clearing fresh pages).
class StackPool {
public:
    static std::unique_ptr<FiberStack> take(std::size_t size) {
        auto& free = stacks();
        for (auto it = free.rbegin(); it != free.rend(); ++it)
            if ((*it)->size() == size) {
                auto stack = std::move(*it);
                free.erase(std::next(it).base());
                return stack;
            }
        return std::make_unique<FiberStack>(size);
    }
    static void give(std::unique_ptr<FiberStack> stack) {
        if (stacks().size() < 1024) stacks().push_back(std::move(stack));  // a block's worth at most
    }

private:
    static std::vector<std::unique_ptr<FiberStack>>& stacks() {
        thread_local std::vector<std::unique_ptr<FiberStack>> free;
        return free;
    }
};

class FiberBlock final : public Worker {
public:
    FiberBlock(Launch& launch, bool reversed) : launch_(launch), reversed_(reversed) {
        // Kernels keep their per-thread arrays (a query row, an accumulator, wmma fragments) on
        // this stack.
        const std::size_t stack = HEADWISE_ASAN_FIBERS ? 512 * 1024 : 256 * 1024;
        fibers_.reserve(launch.threads);
        for (unsigned t = 0; t < launch.threads; ++t)
            fibers_.push_back(std::make_unique<Fiber>(stack, launch.thread_index(t), t));
        warps_.resize((launch.threads + 31) / 32);
    }

    std::uint64_t barriers() const { return barriers_; }
    const SharedTraffic& shared_traffic() const { return shared_; }
    std::uint64_t collectives() const { return collectives_; }

    // Runs one block to the end; returns false when a thread failed (the launch has the message).
    bool run(std::uint64_t block_number) {
        for (auto& fiber : fibers_) {
            Fiber& f = *fiber;
            f.stack.prepare();
            getcontext(&f.context);
            f.context.uc_stack.ss_sp = f.stack.bottom();
            f.context.uc_stack.ss_size = f.stack.size();
            f.context.uc_link = nullptr;
            makecontext(&f.context, &FiberBlock::entry, 0);
            f.started = false;
            f.state = State::ready;
            f.barriers = 0;
            f.async = {};
        }
        for (auto& w : warps_) w.pending.clear();
        epoch_base_ = next_block_serial() << 32;
        block_barriers_ = 1;
        for (;;) {
            // Run every fiber that can run; a warp collective completing makes its lanes ready
            // again, possibly ones earlier in the order, hence the repeat.
            for (bool progressed = true; progressed;) {
                progressed = false;
                for (unsigned n = 0; n < fibers_.size(); ++n) {
                    Fiber& f = *fibers_[reversed_ ? fibers_.size() - 1 - n : n];
                    if (f.state != State::ready) continue;
                    threadIdx = f.index;
                    resume(f);
                    progressed = true;
                    if (f.state == State::failed || launch_.failed) return false;
                }
            }
            for (const Warp& w : warps_) {
                if (!w.pending.empty()) {
                    launch_.fail(stuck(w));
                    return false;
                }
            }
            if (stranded(block_number)) return false;
            for (Warp& w : warps_) flush_banks(w);
            bool any_waiting = false;
            for (auto& f : fibers_) {
                if (f->state == State::waiting) f->state = State::ready, any_waiting = true;
            }
            if (!any_waiting) break;
            ++barriers_;
            ++block_barriers_;
        }
        std::vector<std::uint64_t> counts;
        for (const auto& f : fibers_) {
            counts.push_back(f->barriers);
            if (f->state == State::done) f->stack.returned();
        }
        launch_.check_barrier_counts(counts, block_number);
        return !launch_.failed;
    }

    // A thread that returned while others wait at a barrier, or threads waiting at different
    // barriers: on a GPU the block hangs or misbehaves. Reported at the barriers' lines in the
    // kernel (never the launch).
    bool stranded(std::uint64_t block_number) {
        const auto first = [&](State s) -> const Fiber* {
            for (const auto& f : fibers_)
                if (f->state == s) return f.get();
            return nullptr;
        };
        const Fiber* waiting = first(State::waiting);
        // Threads waiting at two different __syncthreads() (one inside an if, another after it).
        for (const auto& f : fibers_) {
            if (waiting == nullptr || f->state != State::waiting) continue;
            const std::string here = site(waiting->barrier_site), there = site(f->barrier_site);
            if (here == there) continue;
            launch_.fail("thread " + str(waiting->index) + " waits at the __syncthreads() at " + here + " but thread " +
                         str(f->index) + " at the one at " + there + ", in block " +
                         str(launch_.block_index(block_number)) +
                         ": every thread of a block must reach the same barrier (a __syncthreads() inside an if?)");
            return true;
        }
        const Fiber* gone = first(State::done);
        if (gone == nullptr || waiting == nullptr) return false;
        launch_.fail("__syncthreads() at " + site(waiting->barrier_site) + " is reached by thread " +
                     str(waiting->index) + " but never by thread " + str(gone->index) + " of block " +
                     str(launch_.block_index(block_number)) + ", which returned before it (after " +
                     std::to_string(gone->barriers) + " barrier" + (gone->barriers == 1 ? "" : "s") +
                     "): every thread of a block must reach every barrier (an early return, or a barrier inside an "
                     "if?)");
        return true;
    }

    void sync(const std::source_location& where) override {
        current_->barrier_site = where;
        ++current_->barriers;
        current_->state = State::waiting;
        suspend(*current_, false);
    }

    machine::WarpResult warp(const machine::WarpCall& call) override {
        Fiber& f = *current_;
        const unsigned lane = f.linear % 32, bit = 1u << lane;
        Warp& w = warps_[f.linear / 32];
        const auto at = [&] {
            return call.name + std::string(" at ") + site(call.where) + " in " + here() + " (warp " +
                   std::to_string(f.linear / 32) + ", lane " + std::to_string(lane) + ")";
        };
        if ((call.mask & bit) == 0)
            throw launch_error(at() + ": the mask " + hex(call.mask) + " leaves out the calling lane itself");
        Pending* p = nullptr;
        for (Pending& q : w.pending)
            if ((q.call.mask & call.mask) != 0) p = &q;
        if (p != nullptr) {
            const auto first = [&] { return std::string(p->call.name) + " at " + site(p->call.where); };
            if (p->call.mask != call.mask)
                throw launch_error(at() + " with mask " + hex(call.mask) + " meets lanes waiting at " + first() +
                                   " with mask " + hex(p->call.mask) + ": lanes that meet must name the same lanes");
            if ((p->call.name != call.name && std::string_view(p->call.name) != call.name) ||
                p->call.where.line() != call.where.line() || p->call.where.column() != call.where.column())
                throw launch_error(at() + ": other lanes named in the mask " + hex(call.mask) + " wait at " + first() +
                                   " -- the warp has diverged (a *_sync call inside an if?)");
            if (p->call.check != call.check)
                throw launch_error(at() + ": lanes of the warp pass different pointers or leading dimensions");
        } else {
            w.pending.push_back(Pending{call, 0, {}, {}});
            p = &w.pending.back();
        }
        p->arrived |= bit;
        p->value[lane] = call.value;
        p->source[lane] = call.source_lane;
        if (p->arrived == p->call.mask) {
            complete(w, f.linear / 32, *p, at);
            w.pending.erase(w.pending.begin() + (p - w.pending.data()));
        } else {
            f.state = State::warp_waiting;
            suspend(f, false);
        }
        return {w.result[lane], w.sequence_of[lane]};
    }

    machine::WarpScratch& scratch() override { return warps_[current_->linear / 32].scratch; }

    Moment now() override {
        const Fiber& f = *current_;
        return {epoch_base_ | block_barriers_, warps_[f.linear / 32].sequence_of[f.linear % 32], f.linear};
    }
    std::string thread_name(std::uint32_t linear) override { return str(launch_.thread_index(linear)); }

    void shared(const std::source_location& where, std::uint32_t word) override {
        ++shared_.accesses;
        if (!bank_model_) return;
        const unsigned lane = current_->linear % 32;
        Warp& w = warps_[current_->linear / 32];
        const auto same = [&](const Site& c) {
            return c.line == where.line() && c.column == where.column() && c.file == where.file_name();
        };
        Site* s = w.last_site < w.sites.size() && same(w.sites[w.last_site]) ? &w.sites[w.last_site] : nullptr;
        for (std::size_t n = 0; s == nullptr && n < w.sites.size(); ++n)
            if (same(w.sites[n])) s = &w.sites[n];
        if (s == nullptr) {
            w.sites.push_back(Site{where.file_name(), where.line(), where.column(), {}, {}, {}});
            s = &w.sites.back();
        }
        w.last_site = std::size_t(s - w.sites.data());
        const std::uint32_t k = s->next[lane]++;
        if (k >= s->lanes.size()) s->words.emplace_back(), s->lanes.push_back(0);
        s->words[k][lane] = word;
        s->lanes[k] |= 1u << lane;
    }

    void shared_request(const std::uint32_t* words, unsigned count, unsigned lanes) override {
        shared_.accesses += lanes;
        if (!bank_model_) return;
        ++shared_.requests;
        shared_.wavefronts += std::uint64_t(wavefronts(words, count));
    }
    machine::AsyncState& async() override { return current_->async; }

private:
    enum class State { ready, waiting, warp_waiting, done, failed };
    struct Fiber {
        Fiber(std::size_t stack_size, dim3 idx, unsigned t)
            : owned(StackPool::take(stack_size)), stack(*owned), index(idx), linear(t) {}
        Fiber(const Fiber&) = delete;
        Fiber& operator=(const Fiber&) = delete;
        ~Fiber() { StackPool::give(std::move(owned)); }
        std::unique_ptr<FiberStack> owned;
        FiberStack& stack;
        dim3 index;
        unsigned linear;  // x fastest: warp linear / 32, lane linear % 32
        ucontext_t context{};
        void* jump[5] = {};          // where suspend() left off (__builtin_setjmp's buffer)
        bool started = false;        // entered once through its ucontext; since then by jump
        void* fake_stack = nullptr;  // ASan's, while the fiber is suspended
        State state = State::ready;
        std::uint64_t barriers = 0;
        machine::AsyncState async;          // its cp.async copies not yet waited for
        std::source_location barrier_site;  // the __syncthreads() it waits at
    };

    // A switch costs a swapcontext only the first time a fiber runs in a block. After that it is
    // __builtin_setjmp / __builtin_longjmp: the registers and the stack pointer, no signal mask
    // (swapcontext makes a system call for that each time, which warp-level kernels, meeting
    // their lanes dozens of times per row, would pay millions of times). Under AddressSanitizer
    // the same jumps are wrapped in the annotations it needs (__sanitizer_start_switch_fiber /
    // __sanitizer_finish_switch_fiber): a swapcontext per switch would be worse there, as ASan's
    // swapcontext re-maps the shadow of the whole target stack each time (an mmap and madvise per
    // switch made up a third of exercise 06's grading time).
    [[gnu::noinline, noreturn]] static void jump_to(void** buffer) { __builtin_longjmp(buffer, 1); }

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
        if (__builtin_setjmp(scheduler_jump_) == 0) {
#if HEADWISE_ASAN_FIBERS
            __sanitizer_start_switch_fiber(&scheduler_fake_stack_, f.stack.bottom(), f.stack.size());
#endif
            if (!f.started) {
                f.started = true;
                swapcontext(&scheduler_, &f.context);  // returns only by the jump back to scheduler_jump_
            } else {
                jump_to(f.jump);
            }
        }
#if HEADWISE_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(scheduler_fake_stack_, nullptr, nullptr);  // back on this stack
#endif
        tl_worker = outer;
    }

    void suspend(Fiber& f, [[maybe_unused]] bool finished) {
        if (__builtin_setjmp(f.jump) == 0) {
#if HEADWISE_ASAN_FIBERS
            // Leaving for good: a null save tells ASan to free the fiber's fake stack.
            __sanitizer_start_switch_fiber(finished ? nullptr : &f.fake_stack, scheduler_bottom_, scheduler_size_);
#endif
            jump_to(scheduler_jump_);
        }
#if HEADWISE_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(f.fake_stack, &scheduler_bottom_, &scheduler_size_);  // resumed
#endif
    }

    void arrived_on_fiber() {
#if HEADWISE_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(nullptr, &scheduler_bottom_, &scheduler_size_);
#endif
    }

    // A warp collective some lanes have reached.
    struct Pending {
        machine::WarpCall call;  // as the first lane made it
        unsigned arrived;
        std::array<std::uint64_t, 32> value;
        std::array<int, 32> source;
    };
    // The k-th shared access at one source location by each lane since the warp last met.
    struct Site {
        const char* file;
        unsigned line, column;
        std::vector<std::array<std::uint32_t, 32>> words;  // [k][lane]
        std::vector<std::uint32_t> lanes;                  // [k]: which lanes made a k-th access
        std::array<std::uint32_t, 32> next;                // per lane: its next k
    };
    struct Warp {
        std::vector<Pending> pending;
        std::array<std::uint64_t, 32> result{};
        std::array<std::uint64_t, 32> sequence_of{};
        std::uint64_t sequence = 0;
        std::vector<Site> sites;
        std::size_t last_site = 0;  // where the previous access was: usually where the next one is
        machine::WarpScratch scratch;
    };

    // Every lane named in the mask has arrived: hand out the results.
    template <class At>
    void complete(Warp& w, unsigned warp, const Pending& p, const At& at) {
        const unsigned mask = p.call.mask;
        std::uint64_t vote = 0;
        for (unsigned l = 0; l < 32; ++l)
            if ((mask >> l & 1u) && p.value[l] != 0) vote |= std::uint64_t(1) << l;
        ++w.sequence;
        for (unsigned l = 0; l < 32; ++l) {
            if (!(mask >> l & 1u)) continue;
            std::uint64_t r = 0;
            switch (p.call.op) {
                case machine::WarpOp::shfl: {
                    const int src = p.source[l];
                    if (src >= 0 && !(mask >> src & 1u))
                        throw launch_error(at() + ": lane " + std::to_string(l) + " reads lane " + std::to_string(src) +
                                           ", which the mask " + hex(mask) + " leaves out");
                    r = src < 0 ? p.value[l] : p.value[unsigned(src)];
                    break;
                }
                case machine::WarpOp::ballot:
                    r = vote;
                    break;
                case machine::WarpOp::any:
                    r = vote != 0;
                    break;
                case machine::WarpOp::all:
                    r = vote == mask;
                    break;
                case machine::WarpOp::sync:
                case machine::WarpOp::wmma:
                    break;
            }
            w.result[l] = r;
            w.sequence_of[l] = w.sequence;
            Fiber& lane = *fibers_[warp * 32 + l];
            if (lane.state == State::warp_waiting) lane.state = State::ready;
        }
        ++collectives_;
        flush_banks(w);
    }

    // Nothing can run and a collective still waits: name a lane that will never come, and why.
    std::string stuck(const Warp& w) const {
        const Pending& p = w.pending.front();
        const unsigned warp = unsigned(&w - warps_.data());
        const unsigned missing = p.call.mask & ~p.arrived;
        unsigned lane = 0;
        while (!(missing >> lane & 1u)) ++lane;
        const unsigned t = warp * 32 + lane;
        std::string why;
        if (t >= fibers_.size()) {
            why = "it does not exist: the block has " + std::to_string(fibers_.size()) + " threads";
        } else {
            switch (fibers_[t]->state) {
                case State::done:
                    why = "it has returned from the kernel";
                    break;
                case State::waiting:
                    why = "it is waiting at __syncthreads()";
                    break;
                default:
                    why = "it is waiting at another warp collective";
                    break;
            }
        }
        return std::string(p.call.name) + " with mask " + hex(p.call.mask) + " at " + site(p.call.where) + ", block " +
               str(blockIdx) + " warp " + std::to_string(warp) + ": lane " + std::to_string(lane) +
               " is named in the mask but never gets there (" + why +
               "). Every lane named in a *_sync mask must make the same call: is it inside an if, or after an early "
               "return?";
    }

    // Turns the accesses logged since the warp last met into requests and wavefronts.
    void flush_banks(Warp& w) {
        for (Site& s : w.sites) {
            for (std::size_t k = 0; k < s.lanes.size() && s.lanes[k] != 0; ++k) {
                std::uint32_t words[32];
                unsigned count = 0;
                for (unsigned l = 0; l < 32; ++l)
                    if (s.lanes[k] >> l & 1u) words[count++] = s.words[k][l];
                ++shared_.requests;
                shared_.wavefronts += std::uint64_t(wavefronts(words, count));
                s.lanes[k] = 0;
            }
            s.next.fill(0);
        }
    }

    Launch& launch_;
    bool reversed_;
    bool bank_model_ = g_bank_model;  // read once per launch
    std::vector<std::unique_ptr<Fiber>> fibers_;
    std::vector<Warp> warps_;
    SharedTraffic shared_;
    std::uint64_t collectives_ = 0;
    std::uint64_t epoch_base_ = 0;      // this block's serial number << 32
    std::uint64_t block_barriers_ = 0;  // barrier intervals so far in this block, from 1

    static std::uint64_t next_block_serial() {
        static std::atomic<std::uint64_t> serial{0};
        return ++serial;
    }
    ucontext_t scheduler_{};
    void* scheduler_jump_[5] = {};
    [[maybe_unused]] void* scheduler_fake_stack_ = nullptr;  // ASan's, while a fiber runs
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
    const Traffic before = machine::traffic;
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
    stats.traffic.loads = machine::traffic.loads - before.loads;
    stats.traffic.stores = machine::traffic.stores - before.stores;
    stats.traffic.load_bytes = machine::traffic.load_bytes - before.load_bytes;
    stats.traffic.store_bytes = machine::traffic.store_bytes - before.store_bytes;
    machine::traffic = before;
    stats.barriers = block.barriers();
    stats.shared = block.shared_traffic();
    stats.warp_collectives = block.collectives();
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
    void sync(const std::source_location&) override {
        ++count_;
        block_barrier_->arrive_and_wait();
    }
    machine::WarpResult warp(const machine::WarpCall& call) override {
        throw launch_error(std::string(call.name) + " at " + site(call.where) +
                           ": warp collectives run under the fiber schedules only (fibers, fibers_reversed)");
    }
    machine::WarpScratch& scratch() override {
        throw launch_error("wmma, mma.sync and ldmatrix run under the fiber schedules only");
    }
    void shared(const std::source_location&, std::uint32_t) override {}  // banks are counted under fibers only
    void shared_request(const std::uint32_t*, unsigned, unsigned) override {}
    machine::AsyncState& async() override { return async_; }
    Moment now() override { return {}; }  // and races checked
    std::string thread_name(std::uint32_t) override { return "?"; }

private:
    std::optional<std::barrier<>>& block_barrier_;
    std::uint64_t& count_;
    machine::AsyncState async_;
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
        machine::traffic = {};
        blockDim = launch.block;
        gridDim = launch.grid;
        threadIdx = launch.thread_index(t);
        for (;;) {
            blockIdx = launch.block_index(block);
            me.async() = {};
            launch.run_kernel();
            in_block->arrive_and_drop();  // a finished thread no longer holds the others back
            between.arrive_and_wait();
            if (stop) break;
        }
        const std::lock_guard lock(total_mutex);
        total += machine::traffic;
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
void set_bank_model(bool on) { g_bank_model = on; }

namespace machine {

void sync_block(const std::source_location& where) {
    if (tl_worker == nullptr) throw launch_error("__syncthreads() called outside a kernel launch at " + site(where));
    tl_worker->sync(where);
}

WarpResult warp_collective(const WarpCall& call) {
    if (tl_worker == nullptr) throw launch_error(std::string(call.name) + " called outside a kernel launch");
    return tl_worker->warp(call);
}

WarpScratch& warp_scratch(std::source_location where) {
    if (tl_worker == nullptr) throw launch_error("wmma called outside a kernel launch at " + site(where));
    return tl_worker->scratch();
}

void shared_access(const std::source_location& where, std::uint32_t word) {
    if (tl_worker != nullptr) tl_worker->shared(where, word);
}

void shared_request(const std::uint32_t* words, unsigned count, unsigned lanes) {
    if (tl_worker != nullptr) tl_worker->shared_request(words, count, lanes);
}

AsyncState& async_state() {
    if (tl_worker == nullptr) throw launch_error("cp.async called outside a kernel launch");
    return tl_worker->async();
}

namespace {

std::string at_line(const char* file, std::uint32_t line) {
    std::string f = file == nullptr ? "?" : file;
    const std::size_t slash = f.find_last_of('/');
    if (slash != std::string::npos) f = f.substr(slash + 1);
    return f + ":" + std::to_string(line);
}

// Which of the block's barrier intervals the two accesses fell in: "before the block's first
// __syncthreads()", "since the block's 2nd __syncthreads()". A race before the first barrier is a
// tile read before it was written; one after a later barrier, often a tile overwritten too early.
std::string interval(std::uint64_t epoch) {
    const std::uint64_t passed = (epoch & 0xffffffffu) - 1;  // the low half counts intervals from 1
    if (passed == 0) return "before the block's first __syncthreads()";
    const std::uint64_t tens = passed % 100 / 10, units = passed % 10;
    const char* suffix = tens == 1 || units > 3 || units == 0 ? "th" : (units == 1 ? "st" : units == 2 ? "nd" : "rd");
    return "since the block's " + std::to_string(passed) + suffix + " __syncthreads()";
}

// Were `other`'s access (at warp-collective count other_seq) and the current thread's ordered by
// something other than a barrier: the same thread, or two lanes of one warp that met since?
bool ordered(const Worker::Moment& now, std::uint32_t other, std::uint64_t other_seq) {
    return other == now.thread || (other / 32 == now.thread / 32 && now.seq > other_seq);
}

[[noreturn]] void race(Worker& w, const Worker::Moment& now, const char* verb, int r, int c,
                       const std::source_location& where, std::uint32_t other, const char* other_verb,
                       const char* other_file, std::uint32_t other_line) {
    throw launch_error("shared memory race in block " + str(blockIdx) + ": thread " + w.thread_name(now.thread) + " " +
                       verb + " element (" + std::to_string(r) + ", " + std::to_string(c) + ") of a shared tile at " +
                       site(where) + ", which thread " + w.thread_name(other) + " " + other_verb + " at " +
                       at_line(other_file, other_line) + " " + interval(now.epoch) +
                       ": a __syncthreads() is missing between the two lines");
}

}  // namespace

namespace {

// A read or write of an element a cp.async of this block is still copying into.
void check_not_pending(const SharedWord& word, const Worker::Moment& now, const char* verb, int r, int c,
                       const std::source_location& where) {
    if (word.async_block == 0 || word.async_block != now.epoch >> 32) return;
    throw launch_error("shared memory race in block " + str(blockIdx) + ": thread " +
                       tl_worker->thread_name(now.thread) + " " + verb + " element (" + std::to_string(r) + ", " +
                       std::to_string(c) + ") of a shared tile at " + site(where) +
                       ", which a cp.async issued by thread " + tl_worker->thread_name(word.async_thread) + " at " +
                       at_line(word.async_file, word.async_line) +
                       " may still be copying into: no cp.async.wait_group covering its group has run yet (and a "
                       "__syncthreads() after it, for the other threads)");
}

}  // namespace

void shared_read(SharedWord& word, int r, int c, const std::source_location& where) {
    if (tl_worker == nullptr) return;
    const Worker::Moment now = tl_worker->now();
    if (now.epoch == 0) return;
    check_not_pending(word, now, "reads", r, c, where);
    if (word.write_epoch == now.epoch && !ordered(now, word.writer, word.write_seq))
        race(*tl_worker, now, "reads", r, c, where, word.writer, "wrote", word.write_file, word.write_line);
    word.read_epoch = now.epoch, word.read_seq = now.seq, word.reader = now.thread;
    word.read_file = where.file_name(), word.read_line = where.line();
}

void shared_write(SharedWord& word, int r, int c, const std::source_location& where) {
    if (tl_worker == nullptr) return;
    const Worker::Moment now = tl_worker->now();
    if (now.epoch == 0) return;
    check_not_pending(word, now, "writes", r, c, where);
    if (word.write_epoch == now.epoch && !ordered(now, word.writer, word.write_seq))
        race(*tl_worker, now, "writes", r, c, where, word.writer, "wrote", word.write_file, word.write_line);
    if (word.read_epoch == now.epoch && !ordered(now, word.reader, word.read_seq))
        race(*tl_worker, now, "writes", r, c, where, word.reader, "read", word.read_file, word.read_line);
    word.write_epoch = now.epoch, word.write_seq = now.seq, word.writer = now.thread;
    word.write_file = where.file_name(), word.write_line = where.line();
}

void async_issue(SharedWord* words, int count, int r, int c, const std::source_location& where) {
    for (int e = 0; e < count; ++e) shared_write(words[e], r, c + e, where);  // as a write, at the issue
    if (tl_worker == nullptr) return;
    const Worker::Moment now = tl_worker->now();
    if (now.epoch == 0) return;
    for (int e = 0; e < count; ++e) {
        words[e].async_block = now.epoch >> 32, words[e].async_thread = now.thread;
        words[e].async_file = where.file_name(), words[e].async_line = where.line();
    }
}

void async_complete(const AsyncCopy& copy, const std::source_location& where) {
    std::memcpy(copy.dst, copy.data, 16);
    if (tl_worker == nullptr) return;
    const Worker::Moment now = tl_worker->now();
    for (int e = 0; e < copy.count; ++e) {
        SharedWord& w = copy.words[e];
        w.async_block = 0;
        if (now.epoch == 0) continue;
        // Written now, from the other threads' point of view: they must pass a barrier first.
        w.write_epoch = now.epoch, w.write_seq = now.seq, w.writer = now.thread;
        w.write_file = where.file_name(), w.write_line = where.line();
    }
}

void shared_out_of_bounds(int r, int c, int rows, int cols, const std::source_location& where) {
    throw launch_error("shared memory index out of bounds: (" + std::to_string(r) + ", " + std::to_string(c) +
                       ") of a (" + std::to_string(rows) + ", " + std::to_string(cols) + ") tile at " + site(where) +
                       ", in " + here());
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
    LaunchStats stats =
        schedule == Schedule::threads ? run_threads(launch) : run_fibers(launch, schedule == Schedule::fibers_reversed);
    if (launch.failed) {
        if (launch.kernel_error) std::rethrow_exception(launch.kernel_error);  // not a new throw: keeps its stack
        throw launch_error(launch.error);
    }
    stats.blocks = launch.blocks;
    stats.threads_per_block = launch.threads;
    return stats;
}

}  // namespace machine

}  // namespace headwise::emulator

namespace nvcuda::wmma::machine {

void bad_call(const char* what, const std::string& why, const std::source_location& where) {
    throw headwise::emulator::launch_error(std::string(what) + " at " + headwise::emulator::site(where) + ": " + why +
                                           ", in " + headwise::emulator::here());
}

}  // namespace nvcuda::wmma::machine

namespace headwise::emulator::machine {

void bad_primitive(const char* what, const std::string& why, const std::source_location& where) {
    throw launch_error(std::string(what) + " at " + site(where) + ": " + why + ", in " + here());
}

}  // namespace headwise::emulator::machine
