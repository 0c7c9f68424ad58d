#include "headwise/fast/parallel.hpp"

#include "headwise/fast/blas.hpp"
#include "headwise/fast/cpu_count.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace headwise::fast {

namespace {

// Holds OpenBLAS at one thread while any parallel_for runs, then gives back its own count.
// OpenBLAS's thread count is one process-wide setting, and parallel_for may run on several of
// the caller's threads at once: the first to enter saves the count, the last to leave restores it.
// At one already (headwise's default, blas_coretype.cpp) nothing is called: setting the count
// restarts OpenBLAS's stopped worker threads, which then spin for ~0.1 s.
class SingleThreadedBlas {
public:
    SingleThreadedBlas() {
        const std::lock_guard lock(mutex_);
        if (holders_++ == 0) {
            saved_ = blas::threads();
            if (saved_ != 1) blas::set_threads(1);
        }
    }
    ~SingleThreadedBlas() {
        const std::lock_guard lock(mutex_);
        if (--holders_ == 0 && saved_ != 1) blas::set_threads(saved_);
    }
    SingleThreadedBlas(const SingleThreadedBlas&) = delete;
    SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

private:
    static inline std::mutex mutex_;
    static inline int holders_ = 0;
    static inline int saved_ = 1;
};

// Below this many multiply-adds a linear layer runs as a single BLAS call: starting a thread
// costs more than the work saved.
constexpr double min_parallel_macs = 1 << 22;

}  // namespace

std::size_t worker_count() {
    // Asked once (the affinity mask, /proc/self/cgroup and the quota's files: a dozen system calls
    // that `headwise attend` would otherwise make a dozen times per forward). A bad
    // HEADWISE_THREADS throws usage_error here, on every call, until the program stops.
    static const std::size_t count = machine_threads();
    return count;
}

namespace {
thread_local int serial_scopes = 0;  // SerialHere objects alive on this thread
}  // namespace

SerialHere::SerialHere() { ++serial_scopes; }
SerialHere::~SerialHere() { --serial_scopes; }

void parallel_for(std::size_t count, const std::function<void(std::size_t, std::size_t)>& task) {
    const std::size_t workers = std::min(worker_count(), count);
    if (workers <= 1 || serial_scopes > 0) {
        for (std::size_t i = 0; i < count; ++i) task(i, 0);
        return;
    }
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&](std::size_t worker) {
        try {
            for (std::size_t i = next++; i < count; i = next++) task(i, worker);
        } catch (...) {
            const std::lock_guard lock(failure_mutex);
            if (!failure) failure = std::current_exception();
            next = count;  // the others stop at their next index
        }
    };
    {
        const SingleThreadedBlas single;
        std::vector<std::jthread> pool;
        for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
        work(0);
    }  // joined here
    if (failure) std::rethrow_exception(failure);
}

namespace {
// panel(r0, r1) over [0, rows), one panel per core, or all at once on one core when there are few
// rows or too few multiply-adds to be worth sharing.
template <class Panel>
void in_row_panels(std::size_t rows, double macs, const Panel& panel) {
    const std::size_t workers = worker_count();
    if (workers <= 1 || rows < 2 * workers || macs < min_parallel_macs) {
        panel(0, rows);
        return;
    }
    const std::size_t step = (rows + workers - 1) / workers;
    parallel_for(workers, [&](std::size_t p, std::size_t) { panel(p * step, std::min(rows, (p + 1) * step)); });
}
}  // namespace

void gemm_rows(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
               const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    in_row_panels(m, double(m) * double(n) * double(k), [&](std::size_t r0, std::size_t r1) {
        if (r1 <= r0) return;
        // Rows r0.. of op(A): rows of A, or with trans_a its columns.
        blas::gemm(trans_a, trans_b, r1 - r0, n, k, 1.0f, trans_a ? a + r0 : a + r0 * lda, lda, b, ldb, beta,
                   c + r0 * ldc, ldc);
    });
}

void linear_rows(const float* x, std::size_t rows, std::size_t in, const float* w, std::size_t out, const float* b,
                 float* y) {
    linear_rows(x, rows, in, in, w, in, out, b, false, y, out);
}

void linear_rows(const float* x, std::size_t rows, std::size_t in, std::size_t ldx, const float* w, std::size_t ldw,
                 std::size_t out, const float* b, bool accumulate, float* y, std::size_t ldy) {
    auto panel = [&](std::size_t r0, std::size_t r1) {
        if (r1 <= r0) return;
        const bool add_bias = b != nullptr && !accumulate;
        if (add_bias)
            for (std::size_t r = r0; r < r1; ++r) std::copy(b, b + out, y + r * ldy);
        blas::gemm(false, true, r1 - r0, out, in, 1.0f, x + r0 * ldx, ldx, w, ldw, add_bias || accumulate ? 1.0f : 0.0f,
                   y + r0 * ldy, ldy);
    };
    in_row_panels(rows, static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out), panel);
}

}  // namespace headwise::fast
