// emulator/emulator.hpp -- runs CUDA kernels, unchanged, on the CPU.
//
// A kernel in src/kernels/*.cuh is plain CUDA C++. nvcc compiles it for the GPU; g++ compiles the
// very same text against this header, which supplies what CUDA would:
//
//   threadIdx, blockIdx, blockDim, gridDim   per emulated thread (thread_local)
//   __global__ __device__ __host__           nothing to do on a CPU: empty
//   __shared__                               one copy per block: blocks run one after another, so a
//                                            function-local static is exactly "per block"
//   __syncthreads()                          a real barrier across the block's threads
//   launch(grid, block, kernel, args...)     the equivalent of kernel<<<grid, block>>>(args...)
//   global_ptr<T>                            a pointer into "global memory" that counts every load
//                                            and store and checks every index against the buffer
//
// How the threads of a block run (Schedule):
//   fibers           every CUDA thread is a fiber (its own small stack) on the calling OS thread;
//                    a fiber runs until it reaches __syncthreads(), then the next one runs. The
//                    barrier is real (nobody passes it before all have arrived) and the order is
//                    deterministic, which is what makes a *missing* barrier visible: the first
//                    thread runs on alone and reads tile entries nobody has written yet.
//   fibers_reversed  the same, threads resumed in the opposite order. A race-free kernel gives
//                    bit-identical results under both orders; a racy one almost never does.
//   threads          every CUDA thread is a std::thread and __syncthreads() is a std::barrier:
//                    truly concurrent, which is what ThreadSanitizer needs to see a race.
// Fibers are the default (a block of 64 threads costs a few microseconds per barrier instead of
// 64 kernel-level context switches); under ThreadSanitizer the default is threads.
//
// What it does not model: warps and their lockstep execution (no kernel here relies on it),
// shared-memory bank conflicts, caches (the traffic counted is what the kernel *asks* global
// memory for, before any L1/L2 would serve it), timing, dynamic shared memory.
#pragma once

#ifdef __CUDACC__
#error "emulator/emulator.hpp is for g++ builds; nvcc compiles the kernels for the GPU"
#endif

#include "emulator/runtime.hpp"

#include <math.h>  // expf, fmaxf, INFINITY in the global namespace, as CUDA device code has them

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

// ---------------------------------------------------------------------------------------------
// The CUDA vocabulary, in the global namespace where CUDA puts it.

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local dim3 threadIdx{0, 0, 0};
inline thread_local dim3 blockIdx{0, 0, 0};
inline thread_local dim3 blockDim{1, 1, 1};
inline thread_local dim3 gridDim{1, 1, 1};

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static

namespace headwise::emulator::detail {
void sync_block();  // the barrier itself, in emulator.cpp
}

// Every thread of the block waits here until all have arrived. The empty asm statements tell the
// compiler that memory may have changed meanwhile (another thread wrote the tile), so nothing read
// before the barrier is reused after it.
inline void __syncthreads() {
    asm volatile("" ::: "memory");
    headwise::emulator::detail::sync_block();
    asm volatile("" ::: "memory");
}

namespace headwise::emulator {

namespace detail {

inline thread_local Traffic traffic;  // this OS thread's counters; launch() collects them

[[noreturn]] void out_of_bounds(bool read_only, std::ptrdiff_t index, std::size_t size);
[[noreturn]] void bad_slice(std::size_t offset, std::size_t count, std::size_t size);

using Entry = void (*)(const void* call);
LaunchStats run(dim3 grid, dim3 block, Schedule schedule, Entry entry, const void* call);

}  // namespace detail

// One element of global memory. Reading it counts a load, assigning to it counts a store.
template <class T>
class global_ref {
public:
    using value_type = std::remove_const_t<T>;
    [[gnu::always_inline]] explicit global_ref(T* p) : p_(p) {}
    global_ref(const global_ref&) = default;

    [[gnu::always_inline]] operator value_type() const {
        ++detail::traffic.loads;
        detail::traffic.load_bytes += sizeof(T);
        return *p_;
    }
    [[gnu::always_inline]] global_ref& operator=(value_type x)
        requires(!std::is_const_v<T>)
    {
        ++detail::traffic.stores;
        detail::traffic.store_bytes += sizeof(T);
        *p_ = x;
        return *this;
    }
    // out[i] = in[j] copies the value (a load and a store), not the reference.
    global_ref& operator=(const global_ref& other)
        requires(!std::is_const_v<T>)
    {
        return *this = static_cast<value_type>(other);
    }
    global_ref& operator+=(value_type x)
        requires(!std::is_const_v<T>)
    {
        return *this = static_cast<value_type>(*this) + x;
    }

private:
    T* p_;
};

// A pointer into global memory that knows how many elements lie beyond it. Under nvcc the same
// name is a plain T* (src/kernels/portable.cuh), so kernels index it exactly like a pointer.
template <class T>
class global_ptr {
public:
    global_ptr() = default;
    global_ptr(T* p, std::size_t size) : p_(p), size_(size) {}
    template <class U>
        requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
    global_ptr(global_ptr<U> other) : p_(other.get()), size_(other.size()) {}

    [[gnu::always_inline]] global_ref<T> operator[](std::ptrdiff_t i) const {
        if (i < 0 || static_cast<std::size_t>(i) >= size_) detail::out_of_bounds(std::is_const_v<T>, i, size_);
        return global_ref<T>(p_ + i);
    }
    global_ptr operator+(std::ptrdiff_t offset) const {
        if (offset < 0 || static_cast<std::size_t>(offset) > size_) detail::bad_slice(offset, 0, size_);
        return global_ptr(p_ + offset, size_ - static_cast<std::size_t>(offset));
    }

    T* get() const { return p_; }
    std::size_t size() const { return size_; }

private:
    T* p_ = nullptr;
    std::size_t size_ = 0;
};

// The `count` elements starting at `offset`: indexing outside them is an error, even where the
// underlying buffer goes on (so reading one row past a head's keys is caught, not silently served
// from the next head).
template <class T>
global_ptr<T> slice(global_ptr<T> p, std::size_t offset, std::size_t count) {
    if (offset > p.size() || count > p.size() - offset) detail::bad_slice(offset, count, p.size());
    return global_ptr<T>(p.get() + offset, count);
}

// kernel<<<grid, block>>>(args...) becomes launch(grid, block, kernel, args...). Arguments are
// converted to the kernel's parameter types once and every thread receives copies, as on a GPU.
// Blocks run one after another; threads of a block as the schedule says. Throws launch_error.
template <class... Params, class... Args>
LaunchStats launch(Schedule schedule, dim3 grid, dim3 block, void (*kernel)(Params...), Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args), "kernel launched with the wrong number of arguments");
    struct Call {
        void (*kernel)(Params...);
        std::tuple<std::decay_t<Params>...> params;
    };
    const Call call{kernel, std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)};
    const detail::Entry entry = [](const void* c) {
        const Call& self = *static_cast<const Call*>(c);
        std::apply(self.kernel, self.params);
    };
    return detail::run(grid, block, schedule, entry, &call);
}

template <class... Params, class... Args>
LaunchStats launch(dim3 grid, dim3 block, void (*kernel)(Params...), Args&&... args) {
    return launch(default_schedule(), grid, block, kernel, std::forward<Args>(args)...);
}

}  // namespace headwise::emulator
