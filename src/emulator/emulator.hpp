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
//   atomicAdd(p, x)                          for float, on a global_ptr (a read and a write, counted)
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
// Warps (fiber schedules only): the threads of a block form warps of 32 lanes in CUDA's linear
// order. A warp collective -- __shfl_sync, __shfl_xor_sync, __shfl_up_sync, __shfl_down_sync,
// __ballot_sync, __any_sync, __all_sync, __syncwarp, and every nvcuda::wmma call (emulator/wmma.hpp)
// -- is a meeting point: each lane named in the mask waits there until all of them have arrived,
// then each gets its result. Between meeting points lanes run one after another, which is one of
// the orders a real warp may take since Volta; code that silently relied on lockstep gets wrong
// answers here, as it may on a GPU. Errors, not tolerance: a lane calling with a mask that leaves
// itself out, lanes of one warp reaching different collectives (or the same one with different
// masks or operands), a lane reading from a lane outside the mask, and a lane named in the mask
// that never arrives (it returned early, or waits at __syncthreads, or does not exist) each stop
// the launch with the kernel's file:line. The stricter-than-Volta part: lanes meeting at different
// lines are reported even when the hardware might let them through.
//
// Shared-memory banks and races: accesses through shared_tile<T, R, C> are checked against the
// tile's bounds, grouped into warp requests to count bank conflicts (runtime.hpp, SharedTraffic;
// each tile assumed to start at bank 0), and checked for races between __syncthreads() (fiber
// schedules). Plain __shared__ arrays and wmma loads and stores are not
// counted (a wmma fragment's layout is the hardware's secret). ldmatrix is counted as the hardware
// serves it (a request per 8 x 8 matrix: 8 rows of 16 bytes) and race-checked; cp.async writes
// are race-checked (reading a destination before the cp.async.wait_group that covers it is an
// error naming both lines) but not counted, nor are kernels/mma.cuh's 16-byte load_16 copies.
//
// What it does not model: caches (the traffic counted is what the kernel *asks* global memory
// for, before any L1/L2 would serve it), timing, dynamic shared memory, 8- and 16-byte shared
// accesses.
#pragma once

#ifdef __CUDACC__
#error "emulator/emulator.hpp is for g++ builds; nvcc compiles the kernels for the GPU"
#endif

#include "emulator/half.hpp"
#include "emulator/runtime.hpp"

#include <math.h>  // expf, fmaxf, INFINITY in the global namespace, as CUDA device code has them

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>
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
#define __launch_bounds__(...)  // a register budget for nvcc; nothing to do on a CPU

namespace headwise::emulator::machine {
void sync_block(const std::source_location& where);  // the barrier itself, in emulator.cpp

enum class WarpOp : std::uint8_t { shfl, ballot, any, all, sync, wmma };

// One lane's arrival at a warp collective.
struct WarpCall {
    const char* name;  // "__shfl_xor_sync", as the kernel wrote it
    WarpOp op;
    unsigned mask;        // the lanes that must meet here
    std::uint64_t value;  // this lane's operand (its bits)
    int source_lane;      // shfl: the lane whose operand this lane receives; -1: its own
    std::uint64_t check;  // must be the same in every lane (wmma: the pointer, ldm and layout)
    std::source_location where;
};
struct WarpResult {
    std::uint64_t value;     // shfl: the source lane's operand; ballot: the vote; any/all: 0 or 1
    std::uint64_t sequence;  // how many collectives this warp has completed, this one included
};
WarpResult warp_collective(const WarpCall& call);

// Scratch memory of the calling lane's warp (wmma computes a product once and hands it to all lanes;
// mma.sync and ldmatrix gather every lane's registers or addresses in `in` before the warp meets,
// and the first lane through hands each lane its result in `out`).
struct WarpScratch {
    std::uint64_t sequence = ~std::uint64_t(0);
    float values[256];
    std::uint32_t in[32][10];
    std::uint32_t out[32][4];
};
WarpScratch& warp_scratch(std::source_location where);

// One lane's access to the 4-byte word `word` of a shared tile, at `where` in the kernel.
void shared_access(const std::source_location& where, std::uint32_t word);
// One warp request whose addresses are already known (an ldmatrix phase: 8 rows of 16 bytes):
// `lanes` lane accesses touching the 4-byte `words`, served in as many wavefronts as its bank conflicts need.
void shared_request(const std::uint32_t* words, unsigned count, unsigned lanes);
[[noreturn]] void shared_out_of_bounds(int r, int c, int rows, int cols, const std::source_location& where);

// The calling thread's lane: its linear index in the block (x fastest) modulo 32.
inline unsigned lane_id() { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32u; }

template <class T>
std::uint64_t to_bits(const T& x) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp shuffles move values of at most 8 bytes");
    std::uint64_t u = 0;
    std::memcpy(&u, &x, sizeof(T));
    return u;
}
template <class T>
T from_bits(std::uint64_t u) {
    T x;
    std::memcpy(&x, &u, sizeof(T));
    return x;
}

template <class T>
T shuffle(const char* name, unsigned mask, T var, int source, const std::source_location& where) {
    return from_bits<T>(warp_collective({name, WarpOp::shfl, mask, to_bits(var), source, 0, where}).value);
}

}  // namespace headwise::emulator::machine

// ---------------------------------------------------------------------------------------------
// Warp-level primitives, with CUDA's signatures (plus the call site, filled in by the compiler).
inline constexpr int warpSize = 32;

// Lane (lane / width) * width + src_lane % width's var.
template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
              std::source_location where = std::source_location::current()) {
    const int lane = int(headwise::emulator::machine::lane_id());
    const int source = (lane / width) * width + ((src_lane % width) + width) % width;
    return headwise::emulator::machine::shuffle("__shfl_sync", mask, var, source, where);
}
// Lane lane ^ lane_mask's var (a butterfly); the lane's own if that leaves its width-segment.
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                  std::source_location where = std::source_location::current()) {
    const int lane = int(headwise::emulator::machine::lane_id());
    const int source = lane ^ lane_mask;
    const bool inside = source / width == lane / width && source < warpSize;
    return headwise::emulator::machine::shuffle("__shfl_xor_sync", mask, var, inside ? source : -1, where);
}
// Lane lane + delta's var; the lane's own when that is past the end of its width-segment.
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   std::source_location where = std::source_location::current()) {
    const int lane = int(headwise::emulator::machine::lane_id());
    const bool inside = lane % width + int(delta) < width;
    return headwise::emulator::machine::shuffle("__shfl_down_sync", mask, var, inside ? lane + int(delta) : -1, where);
}
// Lane lane - delta's var; the lane's own when that is before the start of its width-segment.
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 std::source_location where = std::source_location::current()) {
    const int lane = int(headwise::emulator::machine::lane_id());
    const bool inside = lane % width >= int(delta);
    return headwise::emulator::machine::shuffle("__shfl_up_sync", mask, var, inside ? lane - int(delta) : -1, where);
}
// Bit l set when lane l is in the mask and its predicate is non-zero.
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location where = std::source_location::current()) {
    using namespace headwise::emulator::machine;
    return unsigned(warp_collective({"__ballot_sync", WarpOp::ballot, mask, predicate != 0, -1, 0, where}).value);
}
inline int __any_sync(unsigned mask, int predicate, std::source_location where = std::source_location::current()) {
    using namespace headwise::emulator::machine;
    return int(warp_collective({"__any_sync", WarpOp::any, mask, predicate != 0, -1, 0, where}).value);
}
inline int __all_sync(unsigned mask, int predicate, std::source_location where = std::source_location::current()) {
    using namespace headwise::emulator::machine;
    return int(warp_collective({"__all_sync", WarpOp::all, mask, predicate != 0, -1, 0, where}).value);
}
// The lanes in the mask wait for each other (and see each other's shared-memory writes).
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location where = std::source_location::current()) {
    using namespace headwise::emulator::machine;
    asm volatile("" ::: "memory");
    warp_collective({"__syncwarp", WarpOp::sync, mask, 0, -1, 0, where});
    asm volatile("" ::: "memory");
}

// Every thread of the block waits here until all have arrived. The empty asm statements tell the
// compiler that memory may have changed meanwhile (another thread wrote the tile), so nothing read
// before the barrier is reused after it. Its line in the kernel is kept: a barrier that not every
// thread reaches is reported there.
inline void __syncthreads(std::source_location where = std::source_location::current()) {
    asm volatile("" ::: "memory");
    headwise::emulator::machine::sync_block(where);
    asm volatile("" ::: "memory");
}

namespace headwise::emulator {

namespace machine {

inline thread_local Traffic traffic;  // this OS thread's counters; launch() collects them

[[noreturn]] void out_of_bounds(bool read_only, std::ptrdiff_t index, std::size_t size);
[[noreturn]] void bad_slice(std::size_t offset, std::size_t count, std::size_t size);

using Entry = void (*)(const void* call);
LaunchStats run(dim3 grid, dim3 block, Schedule schedule, Entry entry, const void* call);

}  // namespace machine

// One element of global memory. Reading it counts a load, assigning to it counts a store.
template <class T>
class global_ref {
public:
    using value_type = std::remove_const_t<T>;
    [[gnu::always_inline]] explicit global_ref(T* p) : p_(p) {}
    global_ref(const global_ref&) = default;

    [[gnu::always_inline]] operator value_type() const {
        ++machine::traffic.loads;
        machine::traffic.load_bytes += sizeof(T);
        return *p_;
    }
    [[gnu::always_inline]] global_ref& operator=(value_type x) requires(!std::is_const_v<T>) {
        ++machine::traffic.stores;
        machine::traffic.store_bytes += sizeof(T);
        *p_ = x;
        return *this;
    }
    // out[i] = in[j] copies the value (a load and a store), not the reference.
    global_ref& operator=(const global_ref& other) requires(!std::is_const_v<T>) {
        return *this = static_cast<value_type>(other);
    }
    global_ref& operator+=(value_type x) requires(!std::is_const_v<T>) {
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
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>) global_ptr(global_ptr<U> other)
        : p_(other.get()), size_(other.size()) {}

    [[gnu::always_inline]] global_ref<T> operator[](std::ptrdiff_t i) const {
        if (i < 0 || static_cast<std::size_t>(i) >= size_) machine::out_of_bounds(std::is_const_v<T>, i, size_);
        return global_ref<T>(p_ + i);
    }
    global_ptr operator+(std::ptrdiff_t offset) const {
        if (offset < 0 || static_cast<std::size_t>(offset) > size_) machine::bad_slice(offset, 0, size_);
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
    if (offset > p.size() || count > p.size() - offset) machine::bad_slice(offset, count, p.size());
    return global_ptr<T>(p.get() + offset, count);
}

namespace machine {

// Who last wrote and who last read one element of a shared tile, and when: the race check.
struct SharedWord {
    std::uint64_t write_epoch = 0, read_epoch = 0;  // block and barrier interval; 0 = never
    std::uint64_t write_seq = 0, read_seq = 0;      // the thread's warp collectives completed by then
    std::uint32_t writer = 0, reader = 0;           // linear thread index in the block
    const char* write_file = nullptr;
    const char* read_file = nullptr;
    std::uint32_t write_line = 0, read_line = 0;
    // A cp.async into this element that no cp.async.wait_group has covered yet: the block it was
    // issued in (its serial number; 0 = none pending), by which thread, at which line.
    std::uint64_t async_block = 0;
    std::uint32_t async_thread = 0, async_line = 0;
    const char* async_file = nullptr;
};
void shared_read(SharedWord& word, int r, int c, const std::source_location& where);
void shared_write(SharedWord& word, int r, int c, const std::source_location& where);

// cp.async: a 16-byte copy from global to shared memory that lands when a cp.async.wait_group
// covering its group runs in the issuing thread (emulator/mma.hpp).
struct AsyncCopy {
    unsigned char* dst;
    unsigned char data[16];  // read from global memory when the copy was issued
    SharedWord* words;       // the destination elements' race records, `count` of them
    int count, r, c;         // elements; the first one's place in its tile
    int group;               // -1 until cp.async.commit_group
};
struct AsyncState {
    AsyncCopy copies[64];  // pending, oldest first
    int pending = 0;
    int committed = 0;  // groups committed so far by this thread in this block
};
AsyncState& async_state();  // the calling (emulated) thread's
// Marks `words` as the target of a pending cp.async by the calling thread; completes `copy`.
void async_issue(SharedWord* words, int count, int r, int c, const std::source_location& where);
void async_complete(const AsyncCopy& copy, const std::source_location& where);

}  // namespace machine

// One element of a shared tile: reading it and assigning to it go through the race check.
template <class T>
class shared_ref {
public:
    [[gnu::always_inline]] shared_ref(T& x, machine::SharedWord& word, int r, int c, const std::source_location& where)
        : x_(x), word_(word), r_(r), c_(c), where_(where) {}
    shared_ref(const shared_ref&) = default;

    [[gnu::always_inline]] operator T() const {
        machine::shared_read(word_, r_, c_, where_);
        return x_;
    }
    // A 16-bit element read straight into a float (two conversions C++ would not chain).
    explicit operator float() const requires(!std::is_same_v<T, float>) { return float(static_cast<T>(*this)); }
    [[gnu::always_inline]] shared_ref& operator=(const T& v) {
        machine::shared_write(word_, r_, c_, where_);
        x_ = v;
        return *this;
    }
    shared_ref& operator=(const shared_ref& other) { return *this = static_cast<T>(other); }
    template <class U>
    shared_ref& operator*=(const U& v) {
        return *this = static_cast<T>(static_cast<T>(*this) * v);
    }
    template <class U>
    shared_ref& operator+=(const U& v) {
        return *this = static_cast<T>(static_cast<T>(*this) + v);
    }

private:
    T& x_;
    machine::SharedWord& word_;
    int r_, c_;
    std::source_location where_;
};

// A (Rows, Cols) tile of __shared__ memory: `__shared__ shared_tile<float, 32, 65> k_tile;` and
// k_tile(r, c) for an element, k_tile.ptr(r, c) for its address (wmma loads and stores). Under nvcc
// the same name is a plain array in a struct (kernels/portable.cuh). Here every access through
// operator() is bounds-checked, goes into the bank-conflict count, and is checked for races: a
// thread reading an element another thread wrote since the last __syncthreads() (or writing one
// another thread read or wrote), unless both are lanes of one warp that have met at a warp
// collective since, stops the launch naming both lines. (Accesses through ptr() -- wmma -- are
// neither counted nor checked.)
template <class T, int Rows, int Cols>
struct shared_tile {
    static_assert(sizeof(T) <= 4, "the bank model covers 1-, 2- and 4-byte elements");
    alignas(128) T data[Rows][Cols];
    machine::SharedWord words[Rows][Cols];

    [[gnu::always_inline]] shared_ref<T> operator()(int r, int c,
                                                    std::source_location where = std::source_location::current()) {
        if (r < 0 || r >= Rows || c < 0 || c >= Cols) machine::shared_out_of_bounds(r, c, Rows, Cols, where);
        machine::shared_access(where,
                               static_cast<std::uint32_t>((std::size_t(r) * Cols + std::size_t(c)) * sizeof(T) / 4));
        return shared_ref<T>(data[r][c], words[r][c], r, c, where);
    }
    T* ptr(int r, int c, std::source_location where = std::source_location::current()) {
        if (r < 0 || r >= Rows || c < 0 || c >= Cols) machine::shared_out_of_bounds(r, c, Rows, Cols, where);
        return &data[r][c];
    }
};

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
    const machine::Entry entry = [](const void* c) {
        const Call& self = *static_cast<const Call*>(c);
        std::apply(self.kernel, self.params);
    };
    return machine::run(grid, block, schedule, entry, &call);
}

template <class... Params, class... Args>
LaunchStats launch(dim3 grid, dim3 block, void (*kernel)(Params...), Args&&... args) {
    return launch(default_schedule(), grid, block, kernel, std::forward<Args>(args)...);
}

}  // namespace headwise::emulator

// atomicAdd(address, val): CUDA's read-modify-write of one float of global memory. It returns the
// old value and counts one load and one store (4 bytes each), as the memory system serves it.
// Kernels pass `buffer + offset` (a float* under nvcc, a global_ptr here, bounds-checked: the element
// must lie inside the buffer or slice). Truly atomic under Schedule::threads (std::atomic_ref);
// blocks run one after another, so on the emulator the order of the additions is deterministic,
// which it is not on a GPU.
inline float atomicAdd(headwise::emulator::global_ptr<float> address, float val) {
    using namespace headwise::emulator;
    if (address.size() == 0) machine::out_of_bounds(false, 0, 0);
    ++machine::traffic.loads, ++machine::traffic.stores;
    machine::traffic.load_bytes += sizeof(float), machine::traffic.store_bytes += sizeof(float);
    return std::atomic_ref<float>(*address.get()).fetch_add(val);
}

#include "emulator/mma.hpp"   // mma.sync, ldmatrix, cp.async: the PTX-level tensor-core primitives
#include "emulator/wmma.hpp"  // nvcuda::wmma, the tensor-core fragments
