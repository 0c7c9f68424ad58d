// headwise/fast/parallel.hpp -- the one place headwise spreads work over the machine's cores.
//
// OpenBLAS keeps its own threads, which spin (sched_yield) for a while after every
// multi-threaded call. If our threads ran next to them, three threads would share two cores.
// So while parallel_for runs, OpenBLAS is held at one thread: every core is ours, and each task's
// BLAS calls run single-threaded inside it.
#pragma once

#include <cstddef>
#include <functional>

namespace headwise::fast {

// Threads parallel_for uses: one per CPU the process may run on, within its cgroup's quota, or
// HEADWISE_THREADS (cpu_count.hpp); at least 1.
std::size_t worker_count();

// Runs task(i, worker) for every i in [0, count), handing indices out in order to
// worker_count() threads (the caller is one of them); `worker` in [0, worker_count()) names the
// thread, so a task can keep per-thread scratch. The first exception thrown by a task stops the
// hand-out and is rethrown here once every thread is done.
void parallel_for(std::size_t count, const std::function<void(std::size_t index, std::size_t worker)>& task);

// While one is alive on a thread, every parallel_for called on that thread runs its tasks there,
// one after the other: for a caller whose own tasks already keep every core busy (the trainer's
// shares of a batch, each a whole forward and backward). Elsewhere a parallel_for inside a task
// still starts threads: the attention backward's uneven tasks gain from it (measured: 10-15%).
class SerialHere {
public:
    SerialHere();
    ~SerialHere();
    SerialHere(const SerialHere&) = delete;
    SerialHere& operator=(const SerialHere&) = delete;
};

// y (rows, out) = x (rows, in) . w^T + b, w stored (out, in) row-major and b optional: one BLAS
// call, or one per core on panels of rows when the product is big enough to be worth it.
void linear_rows(const float* x, std::size_t rows, std::size_t in, const float* w, std::size_t out, const float* b,
                 float* y);

// C (m, n) = op(A) . op(B) + beta C, as blas::gemm (alpha 1), with C's m rows in one panel per
// core when the product is big enough to be worth it (the backward's products: d_y . W_o,
// dy^T . x for a weight's gradient, dq . W_q for an input's).
void gemm_rows(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
               const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);

// The same on matrices that are blocks of bigger ones: row r of x starts at x + r * ldx, row o of
// w at w + o * ldw, row r of y at y + r * ldy. With `accumulate`, y += x . w^T (b is not added).
void linear_rows(const float* x, std::size_t rows, std::size_t in, std::size_t ldx, const float* w, std::size_t ldw,
                 std::size_t out, const float* b, bool accumulate, float* y, std::size_t ldy);

}  // namespace headwise::fast
