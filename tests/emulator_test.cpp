// The CPU emulator (src/emulator): indices, shared memory, barriers, traffic counts, and the
// errors a GPU would not forgive. Small kernels written here, each with a hand-checkable answer.
#include "emulator/emulator.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <string>
#include <vector>

using namespace headwise::emulator;

namespace {

constexpr Schedule all_schedules[] = {Schedule::fibers, Schedule::fibers_reversed, Schedule::threads};

// Each thread writes its (block, thread) coordinates into its own slot of `out`, slots numbered
// the way CUDA numbers them: x fastest, threads within blocks.
__global__ void write_coordinates(global_ptr<int> out) {
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned blk = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned slot = blk * (blockDim.x * blockDim.y * blockDim.z) + t;
    out[6 * slot + 0] = static_cast<int>(blockIdx.x);
    out[6 * slot + 1] = static_cast<int>(blockIdx.y);
    out[6 * slot + 2] = static_cast<int>(blockIdx.z);
    out[6 * slot + 3] = static_cast<int>(threadIdx.x);
    out[6 * slot + 4] = static_cast<int>(threadIdx.y);
    out[6 * slot + 5] = static_cast<int>(threadIdx.z);
}

// out[b * n + t] = in[b * n + (n - 1 - t)]: each block reverses its n elements through shared memory.
__global__ void reverse_in_shared(global_ptr<const int> in, global_ptr<int> out) {
    __shared__ int tile[256];
    const int n = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
    const int base = static_cast<int>(blockIdx.x) * n;
    tile[t] = in[base + t];
    __syncthreads();
    out[base + t] = tile[n - 1 - t];
}

// The same with the barrier forgotten: thread t may read tile[n - 1 - t] before its owner wrote it.
__global__ void reverse_without_barrier(global_ptr<const int> in, global_ptr<int> out) {
    __shared__ int tile[256];
    const int n = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
    const int base = static_cast<int>(blockIdx.x) * n;
    tile[t] = in[base + t];
    out[base + t] = tile[n - 1 - t];
}

// Tree reduction in shared memory: log2(n) rounds, a barrier after each. out[block] = sum of its inputs.
__global__ void block_sum(global_ptr<const int> in, global_ptr<long long> out) {
    __shared__ long long partial[1024];
    const unsigned t = threadIdx.x;
    partial[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}

// out[i] = in[i] + in[i]; then out[i] += 1.
__global__ void double_plus_one(global_ptr<const float> in, global_ptr<float> out, int n) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    out[i] = in[i] + in[i];
    out[i] += 1.0f;
}

// Reads one element past the end: the classic `i <= n` bound.
__global__ void read_one_past_the_end(global_ptr<const float> in, global_ptr<float> out, int n) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i > n) return;
    out[0] = in[i];
}

// Reads row `row` of a (rows, 4) slice that starts one row into the buffer.
__global__ void read_row_of_slice(global_ptr<const float> in, global_ptr<float> out, int rows, int row) {
    const global_ptr<const float> s = slice(in, 4, static_cast<std::size_t>(rows) * 4);
    out[0] = s[row * 4];
}

// Only some threads reach the barrier.
__global__ void barrier_in_a_branch(global_ptr<int> out) {
    if (threadIdx.x < 5) __syncthreads();
    out[threadIdx.x] = 1;
}

// Threads below 5 wait at one barrier, the others at another.
constexpr int if_barrier_line = __LINE__ + 3;
__global__ void barriers_in_if_and_else(global_ptr<int> out) {
    if (threadIdx.x < 5) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1;
}

// Threads from `n` on return after the first barrier of the loop, before its second one.
constexpr int second_barrier_line = __LINE__ + 6;
__global__ void return_before_the_second_barrier(global_ptr<int> out, int n) {
    for (int round = 0; round < 2; ++round) {
        out[threadIdx.x] = round;
        __syncthreads();
        if (int(threadIdx.x) >= n) return;
        __syncthreads();
    }
}

std::vector<int> iota(std::size_t n) {
    std::vector<int> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
}

}  // namespace

TEST_CASE("emulator: every thread sees its own threadIdx, blockIdx, blockDim and gridDim", "[emulator]") {
    const dim3 grid(3, 2, 2), block(4, 3, 2);
    const std::size_t threads = 3 * 2 * 2 * 4 * 3 * 2;
    for (Schedule s : all_schedules) {
        std::vector<int> out(6 * threads, -1);
        launch(s, grid, block, write_coordinates, global_ptr<int>(out.data(), out.size()));
        std::size_t slot = 0;
        for (int bz = 0; bz < 2; ++bz)
            for (int by = 0; by < 2; ++by)
                for (int bx = 0; bx < 3; ++bx)
                    for (int tz = 0; tz < 2; ++tz)
                        for (int ty = 0; ty < 3; ++ty)
                            for (int tx = 0; tx < 4; ++tx, ++slot) {
                                INFO("schedule " << name(s) << ", slot " << slot);
                                const std::vector<int> expected{bx, by, bz, tx, ty, tz};
                                CHECK(std::vector<int>(out.begin() + 6 * slot, out.begin() + 6 * slot + 6) == expected);
                            }
    }
}

TEST_CASE("emulator: __shared__ memory is one array per block, seen by all its threads", "[emulator]") {
    const int n = 64, blocks = 3;
    const std::vector<int> in = iota(n * blocks);
    for (Schedule s : all_schedules) {
        std::vector<int> out(in.size(), -1);
        launch(s, dim3(blocks), dim3(n), reverse_in_shared, global_ptr<const int>(in.data(), in.size()),
               global_ptr<int>(out.data(), out.size()));
        for (int b = 0; b < blocks; ++b)
            for (int t = 0; t < n; ++t) {
                INFO("schedule " << name(s) << ", block " << b << ", thread " << t);
                CHECK(out[b * n + t] == b * n + (n - 1 - t));
            }
    }
}

TEST_CASE("emulator: __syncthreads holds every thread until the whole block arrives", "[emulator]") {
    // 1024 threads and 10 rounds of barriers: any thread running ahead would read a partial sum.
    const unsigned n = 1024, blocks = 2;
    std::vector<int> in(n * blocks);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i % 97) - 40;
    long long expected[blocks] = {0, 0};
    for (std::size_t i = 0; i < in.size(); ++i) expected[i / n] += in[i];
    for (Schedule s : all_schedules) {
        std::vector<long long> out(blocks, 0);
        const LaunchStats stats =
            launch(s, dim3(blocks), dim3(n), block_sum, global_ptr<const int>(in.data(), in.size()),
                   global_ptr<long long>(out.data(), out.size()));
        INFO("schedule " << name(s));
        CHECK(out[0] == expected[0]);
        CHECK(out[1] == expected[1]);
        CHECK(stats.barriers == blocks * 11);  // one after loading + one per halving (log2 1024 = 10)
    }
}

TEST_CASE("emulator: a missing __syncthreads gives wrong answers under the fiber schedules", "[emulator]") {
    // With fibers a thread runs until it reaches a barrier; without one, thread 0 reads tile[63]
    // before thread 63 has written it this time: it gets whatever the tile held before.
    // Deterministic, so a grader can rely on it. (Shared memory keeps what the previous block
    // left there, as on a GPU, so each launch here reverses different numbers.)
    const int n = 64, blocks = 2;
    auto reverse = [&](Schedule s, int first) {
        std::vector<int> in(n * blocks), out(n * blocks, -1);
        std::iota(in.begin(), in.end(), first);
        launch(s, dim3(blocks), dim3(n), reverse_without_barrier, global_ptr<const int>(in.data(), in.size()),
               global_ptr<int>(out.data(), out.size()));
        int wrong = 0;
        for (int i = 0; i < n * blocks; ++i) wrong += out[i] != in[(i / n) * n + (n - 1 - i % n)];
        return wrong;
    };
    CHECK(reverse(Schedule::fibers, 1000) > 0);
    CHECK(reverse(Schedule::fibers_reversed, 2000) > 0);
    CHECK(reverse(Schedule::fibers, 3000) > 0);
}

TEST_CASE("emulator: every global load and store is counted, with its bytes", "[emulator]") {
    const int n = 1000;
    std::vector<float> in(n, 2.0f), out(n, 0.0f);
    for (Schedule s : all_schedules) {
        const LaunchStats stats = launch(s, dim3(8), dim3(128), double_plus_one, global_ptr<const float>(in.data(), n),
                                         global_ptr<float>(out.data(), n), n);
        INFO("schedule " << name(s));
        CHECK(out[0] == 5.0f);
        CHECK(out[n - 1] == 5.0f);
        // per element: in[i] twice, then out[i] += 1 reads out[i] once: 3 loads; 2 stores.
        CHECK(stats.traffic.loads == 3u * n);
        CHECK(stats.traffic.stores == 2u * n);
        CHECK(stats.traffic.load_bytes == 3u * n * sizeof(float));
        CHECK(stats.traffic.store_bytes == 2u * n * sizeof(float));
        CHECK(stats.blocks == 8);
        CHECK(stats.threads_per_block == 128);
    }
}

namespace {

// Every thread adds its global index to bin (index % bins) of `sums`, `rounds` times: many threads
// of one block, and every block, meet on each bin. The sums are small integers: exact in float.
__global__ void atomic_bins(global_ptr<float> sums, int bins, int rounds) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    for (int r = 0; r < rounds; ++r) atomicAdd(sums + (i % bins), static_cast<float>(i));
}

// One atomicAdd at element `bins` of a buffer of `bins`: one past the end.
__global__ void atomic_past_the_end(global_ptr<float> sums, int bins) { atomicAdd(sums + bins, 1.0f); }

}  // namespace

TEST_CASE("emulator: atomicAdd on float adds every thread's value, counted as a load and a store", "[emulator]") {
    const int bins = 8, rounds = 3, threads = 4 * 128;
    std::vector<double> expected(bins, 0.0);  // bin b: rounds * (b + (b + 8) + ... ), in double
    for (int i = 0; i < threads; ++i) expected[std::size_t(i % bins)] += rounds * double(i);
    for (Schedule s : all_schedules) {
        INFO("schedule " << name(s));
        std::vector<float> sums(bins, 0.0f);
        const LaunchStats stats =
            launch(s, dim3(4), dim3(128), atomic_bins, global_ptr<float>(sums.data(), sums.size()), bins, rounds);
        for (int b = 0; b < bins; ++b) CHECK(double(sums[std::size_t(b)]) == expected[std::size_t(b)]);
        CHECK(stats.traffic.loads == std::uint64_t(threads) * rounds);
        CHECK(stats.traffic.stores == std::uint64_t(threads) * rounds);
        CHECK(stats.traffic.bytes() == 8u * threads * rounds);
        CHECK_THROWS_WITH(
            launch(s, dim3(1), dim3(1), atomic_past_the_end, global_ptr<float>(sums.data(), sums.size()), bins),
            Catch::Contains("out of bounds"));
    }
}

TEST_CASE("emulator: reading past the end of a buffer is an error naming the block and thread", "[emulator]") {
    const int n = 100;
    std::vector<float> in(n, 1.0f), out(1);
    for (Schedule s : all_schedules) {
        INFO("schedule " << name(s));
        // i == n is thread 36 of block 1 (1 * 64 + 36 = 100).
        CHECK_THROWS_WITH(
            launch(s, dim3(2), dim3(64), read_one_past_the_end, global_ptr<const float>(in.data(), n),
                   global_ptr<float>(out.data(), 1), n),
            Catch::Contains("index 100 of a 100-element buffer") && Catch::Contains("block (1,0,0) thread (36,0,0)"));
    }
}

namespace {

struct kernel_complaint : launch_error {
    using launch_error::launch_error;
};

__global__ void complain_in_thread_3(global_ptr<int> out) {
    if (threadIdx.x == 3) throw kernel_complaint("thread 3 complains");
    out[int(threadIdx.x)] = 1;
}

}  // namespace

TEST_CASE("emulator: an error thrown in a kernel reaches the caller as the exception the kernel threw", "[emulator]") {
    // Rethrown, not copied into a new launch_error: its type survives, and so does the stack it
    // was thrown from (what the grader reads to name the kernel line).
    std::vector<int> out(8);
    for (Schedule s : all_schedules) {
        INFO("schedule " << name(s));
        CHECK_THROWS_AS(launch(s, dim3(1), dim3(8), complain_in_thread_3, global_ptr<int>(out.data(), out.size())),
                        kernel_complaint);
    }
}

TEST_CASE("emulator: a slice ends where it says, even inside a larger buffer", "[emulator]") {
    std::vector<float> in(40, 3.0f), out(1);
    const global_ptr<const float> buffer(in.data(), in.size());
    launch(dim3(1), dim3(1), read_row_of_slice, buffer, global_ptr<float>(out.data(), 1), 5, 4);  // last row: fine
    CHECK(out[0] == 3.0f);
    // Row 5 of a 5-row slice is still inside the 40-element buffer, but not inside the slice.
    CHECK_THROWS_WITH(launch(dim3(1), dim3(1), read_row_of_slice, buffer, global_ptr<float>(out.data(), 1), 5, 5),
                      Catch::Contains("index 20 of a 20-element buffer"));
    // A slice reaching past the buffer is refused when it is made.
    CHECK_THROWS_WITH(launch(dim3(1), dim3(1), read_row_of_slice, buffer, global_ptr<float>(out.data(), 1), 10, 0),
                      Catch::Contains("elements [4, 44) of a 40-element buffer"));
}

TEST_CASE("emulator: a __syncthreads that only some threads reach is reported", "[emulator]") {
    std::vector<int> out(32);
    for (Schedule s : all_schedules) {
        INFO("schedule " << name(s));
        // The fiber schedules see the threads that returned while others wait, and name the
        // barrier's line; the threads schedule counts the barriers each thread passed.
        const std::string said = s == Schedule::threads
                                     ? "__syncthreads() reached 1 times by thread (0,0,0) but 0 times by thread (5,0,0)"
                                     : "is reached by thread (0,0,0) but never by thread (5,0,0) of block (0,0,0), "
                                       "which returned before it (after 0 barriers)";
        CHECK_THROWS_WITH(launch(s, dim3(1), dim3(32), barrier_in_a_branch, global_ptr<int>(out.data(), out.size())),
                          Catch::Contains(said));
    }
}

TEST_CASE("emulator: threads waiting at two different barriers are reported with both lines", "[emulator]") {
    std::vector<int> out(32);
    for (Schedule s : {Schedule::fibers, Schedule::fibers_reversed}) {
        INFO("schedule " << name(s));
        CHECK_THROWS_WITH(
            launch(s, dim3(1), dim3(32), barriers_in_if_and_else, global_ptr<int>(out.data(), out.size())),
            Catch::Contains(
                "thread (0,0,0) waits at the __syncthreads() at emulator_test.cpp:" + std::to_string(if_barrier_line) +
                " but thread (5,0,0) at the one at emulator_test.cpp:" + std::to_string(if_barrier_line + 2)));
    }
}

TEST_CASE("emulator: a thread that returns before a barrier is reported at that barrier's line", "[emulator]") {
    std::vector<int> out(32);
    for (Schedule s : {Schedule::fibers, Schedule::fibers_reversed}) {
        INFO("schedule " << name(s));
        CHECK_THROWS_WITH(
            launch(s, dim3(1), dim3(32), return_before_the_second_barrier, global_ptr<int>(out.data(), out.size()), 4),
            Catch::Contains("__syncthreads() at emulator_test.cpp:" + std::to_string(second_barrier_line) +
                            " is reached by thread (0,0,0) but never by thread (4,0,0) of block "
                            "(0,0,0), which returned before it (after 1 barrier)"));
    }
}

TEST_CASE("emulator: launch configurations CUDA would reject are rejected", "[emulator]") {
    std::vector<int> out(2048);
    const global_ptr<int> o(out.data(), out.size());
    CHECK_THROWS_WITH(launch(dim3(1), dim3(2048), barrier_in_a_branch, o),
                      Catch::Contains("limited to (1024, 1024, 64)"));
    CHECK_THROWS_WITH(launch(dim3(1), dim3(64, 32), barrier_in_a_branch, o),
                      Catch::Contains("at most 1024 threads per block"));
    CHECK_THROWS_WITH(launch(dim3(0), dim3(32), barrier_in_a_branch, o), Catch::Contains("at least 1"));
    CHECK_THROWS_WITH(launch(dim3(1, 70000), dim3(32), barrier_in_a_branch, o), Catch::Contains("65535"));
}

TEST_CASE("emulator: __syncthreads outside a kernel is an error, not a hang", "[emulator]") {
    CHECK_THROWS_AS(__syncthreads(), launch_error);
}

// ---------------------------------------------------------------------------------------------
// 16-bit floats: every pattern below is worked out by hand from the formats (sign, exponent,
// mantissa), not by the conversion under test.

namespace {
float from_bits32(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
std::uint16_t half_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
std::uint16_t bf16_bits(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
}  // namespace

TEST_CASE("emulator: float to __half rounds to nearest even, bit for bit", "[emulator][half]") {
    CHECK(half_bits(1.0f) == 0x3c00);
    CHECK(half_bits(-2.0f) == 0xc000);
    CHECK(half_bits(0.1f) == 0x2e66);  // 1.6 * 2^-4: mantissa 614.4 -> 614
    CHECK(half_bits(-0.0f) == 0x8000);
    CHECK(half_bits(65504.0f) == 0x7bff);  // the largest finite fp16
    CHECK(half_bits(65519.0f) == 0x7bff);  // below the midpoint to the next (65536 would be 2^16)
    CHECK(half_bits(65520.0f) == 0x7c00);  // the midpoint, 0x7bff is odd: up, into infinity
    CHECK(half_bits(1e6f) == 0x7c00);
    CHECK(half_bits(-INFINITY) == 0xfc00);
    CHECK(half_bits(NAN) == 0x7fff);  // every NaN becomes CUDA's canonical one
    // ties: 1 + 2^-11 lies halfway between 1 (even mantissa) and 1 + 2^-10
    CHECK(half_bits(1.0f + 0x1p-11f) == 0x3c00);
    CHECK(half_bits(1.0f + 3 * 0x1p-11f) == 0x3c02);         // halfway between 0x3c01 (odd) and 0x3c02
    CHECK(half_bits(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);  // just above halfway
    // subnormals: steps of 2^-24 below 2^-14
    CHECK(half_bits(0x1p-24f) == 0x0001);
    CHECK(half_bits(0x1p-25f) == 0x0000);            // half the smallest step, 0 is even
    CHECK(half_bits(3 * 0x1p-26f) == 0x0001);        // 0.75 of a step
    CHECK(half_bits(3 * 0x1p-25f) == 0x0002);        // 1.5 steps: to the even 2
    CHECK(half_bits(1023 * 0x1p-24f) == 0x03ff);     // the largest subnormal
    CHECK(half_bits(1023.5f * 0x1p-24f) == 0x0400);  // rounds up into the smallest normal, 2^-14
    CHECK(half_bits(0x1p-14f) == 0x0400);
    CHECK(half_bits(0x1p-26f) == 0x0000);
}

TEST_CASE("emulator: __half to float is exact", "[emulator][half]") {
    CHECK(__half2float(__ushort_as_half(0x0001)) == 0x1p-24f);
    CHECK(__half2float(__ushort_as_half(0x7bff)) == 65504.0f);
    CHECK(__half2float(__ushort_as_half(0x3555)) == 0.333251953125f);
    CHECK(__half2float(__ushort_as_half(0x8400)) == -0x1p-14f);
    CHECK(__half2float(__ushort_as_half(0xfc00)) == -INFINITY);
    CHECK(std::isnan(__half2float(__ushort_as_half(0x7e00))));
}

TEST_CASE("emulator: float to __nv_bfloat16 rounds to nearest even, bit for bit", "[emulator][half]") {
    CHECK(bf16_bits(1.0f) == 0x3f80);
    CHECK(bf16_bits(from_bits32(0x3f808000)) == 0x3f80);  // 1 + 2^-8: halfway, 0x3f80 is even
    CHECK(bf16_bits(from_bits32(0x3f818000)) == 0x3f82);  // halfway between 0x3f81 (odd) and 0x3f82
    CHECK(bf16_bits(from_bits32(0x3f808001)) == 0x3f81);  // just above halfway
    CHECK(bf16_bits(from_bits32(0x7f7fffff)) == 0x7f80);  // the largest float rounds up to infinity
    CHECK(bf16_bits(from_bits32(0x00010000)) == 0x0001);  // a float subnormal that fits exactly
    CHECK(bf16_bits(-INFINITY) == 0xff80);
    CHECK(bf16_bits(NAN) == 0x7fff);
    CHECK(__bfloat162float(__ushort_as_bfloat16(0x4049)) == 3.140625f);
}

// ---------------------------------------------------------------------------------------------
// Warps: each kernel below runs with blocks of 64 threads (two warps) unless it says otherwise,
// and writes one int per thread.

namespace {

constexpr unsigned full_mask = 0xffffffffu;

std::vector<int> run_per_thread(void (*kernel)(global_ptr<int>), unsigned threads = 64, Schedule s = Schedule::fibers) {
    std::vector<int> out(threads, -1);
    launch(s, dim3(1), dim3(threads), kernel, global_ptr<int>(out.data(), out.size()));
    return out;
}

__global__ void shfl_from_lane_5(global_ptr<int> out) {
    out[threadIdx.x] = __shfl_sync(full_mask, int(threadIdx.x) * 10, 5);
}
__global__ void shfl_xor_1(global_ptr<int> out) { out[threadIdx.x] = __shfl_xor_sync(full_mask, int(threadIdx.x), 1); }
__global__ void shfl_down_4(global_ptr<int> out) {
    out[threadIdx.x] = __shfl_down_sync(full_mask, int(threadIdx.x), 4);
}
__global__ void shfl_up_3(global_ptr<int> out) { out[threadIdx.x] = __shfl_up_sync(full_mask, int(threadIdx.x), 3); }
__global__ void shfl_width_8(global_ptr<int> out) {
    out[threadIdx.x] = __shfl_sync(full_mask, int(threadIdx.x), 2, 8);  // lane 2 of each group of 8
}
__global__ void ballot_every_third(global_ptr<int> out) {
    out[threadIdx.x] = int(__ballot_sync(full_mask, threadIdx.x % 3 == 0));
}
__global__ void any_and_all(global_ptr<int> out) {
    const unsigned lane = threadIdx.x % 32;
    out[threadIdx.x] = __any_sync(full_mask, lane == 7) * 10 + __all_sync(full_mask, lane < 31);
}

// The sum over the warp with five butterfly steps (16, 8, 4, 2, 1): every lane gets 0 + 1 + ... + 31.
__global__ void warp_sum_of_lanes(global_ptr<int> out) {
    int x = int(threadIdx.x % 32);
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(full_mask, x, offset);
    out[threadIdx.x] = x;
}
// The classic slip: the loop stops before offset 1, so even lanes sum the even lanes only.
__global__ void warp_sum_missing_last_step(global_ptr<int> out) {
    int x = int(threadIdx.x % 32);
    for (int offset = 16; offset > 1; offset /= 2) x += __shfl_xor_sync(full_mask, x, offset);
    out[threadIdx.x] = x;
}

// The other classic: a full mask inside a branch only half the warp takes.
__global__ void full_mask_in_a_branch(global_ptr<int> out) {
    int x = int(threadIdx.x);
    if (threadIdx.x % 32 < 16) x = __shfl_xor_sync(full_mask, x, 1);
    out[threadIdx.x] = x;
}
// Both halves shuffle, but at two different calls.
__global__ void full_mask_in_if_and_else(global_ptr<int> out) {
    int x = int(threadIdx.x);
    if (threadIdx.x % 32 < 16) {
        x = __shfl_xor_sync(full_mask, x, 1);
    } else {
        x = __shfl_xor_sync(full_mask, x, 2);
    }
    out[threadIdx.x] = x;
}
// The right way to shuffle within half a warp: each half names itself.
__global__ void half_warp_masks(global_ptr<int> out) {
    const unsigned lane = threadIdx.x % 32;
    const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    out[threadIdx.x] = __shfl_xor_sync(half, int(threadIdx.x), 1);
}
__global__ void mask_without_myself(global_ptr<int> out) { out[threadIdx.x] = __shfl_sync(0x1u, int(threadIdx.x), 0); }
__global__ void reads_outside_the_mask(global_ptr<int> out) {
    if (threadIdx.x % 32 < 16) out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, int(threadIdx.x), 8);
}
__global__ void early_return_then_shuffle(global_ptr<int> out) {
    if (threadIdx.x >= 40) return;  // the last 24 lanes of warp 1 leave
    out[threadIdx.x] = __shfl_xor_sync(full_mask, int(threadIdx.x), 1);
}
__global__ void syncwarp_against_syncthreads(global_ptr<int> out) {
    if (threadIdx.x % 32 < 16) __syncwarp();
    __syncthreads();
    out[threadIdx.x] = 1;
}

// A warp-synchronous shared-memory sum, written as if the 32 lanes moved in lockstep.
template <bool with_syncwarp>
__global__ void shared_tree_sum(global_ptr<int> out) {
    __shared__ int partial[64];
    const int t = int(threadIdx.x), lane = t % 32, base = t - lane;
    partial[t] = lane;
    if (with_syncwarp) __syncwarp();
    for (int offset = 16; offset > 0; offset /= 2) {
        int mine = partial[t];
        if (lane < offset) mine += partial[t + offset];
        if (with_syncwarp) __syncwarp();
        partial[t] = mine;
        if (with_syncwarp) __syncwarp();
    }
    out[t] = partial[base];
}

}  // namespace

TEST_CASE("emulator: __shfl_sync, _xor, _down and _up read the lanes CUDA says they read", "[emulator][warp]") {
    const std::vector<int> from5 = run_per_thread(shfl_from_lane_5), xor1 = run_per_thread(shfl_xor_1),
                           down4 = run_per_thread(shfl_down_4), up3 = run_per_thread(shfl_up_3),
                           width8 = run_per_thread(shfl_width_8);
    for (int t = 0; t < 64; ++t) {
        const int lane = t % 32, warp_base = t - lane;
        INFO("thread " << t);
        CHECK(from5[t] == (warp_base + 5) * 10);  // lane 5 of the thread's own warp
        CHECK(xor1[t] == (t ^ 1));
        CHECK(down4[t] == (lane + 4 < 32 ? t + 4 : t));  // past the end: its own value
        CHECK(up3[t] == (lane >= 3 ? t - 3 : t));
        CHECK(width8[t] == (t / 8) * 8 + 2);
    }
}

TEST_CASE("emulator: __ballot_sync, __any_sync and __all_sync vote over the mask", "[emulator][warp]") {
    const std::vector<int> ballot = run_per_thread(ballot_every_third), votes = run_per_thread(any_and_all);
    // warp 0: lanes 0, 3, ..., 30 -> bits 0, 3, ..., 30; warp 1: threads 33, 36, ..., 63 are
    // lanes 1, 4, ..., 31 -> bits 1, 4, ..., 31.
    CHECK(unsigned(ballot[0]) == 0x49249249u);
    CHECK(unsigned(ballot[31]) == 0x49249249u);
    CHECK(unsigned(ballot[32]) == 0x92492492u);
    CHECK(votes[0] == 10);  // some lane is 7; not every lane is below 31
}

TEST_CASE("emulator: a five-step xor reduction sums the warp; one step short gives a wrong sum", "[emulator][warp]") {
    const std::vector<int> right = run_per_thread(warp_sum_of_lanes),
                           short_by_one = run_per_thread(warp_sum_missing_last_step);
    for (int t = 0; t < 64; ++t) CHECK(right[t] == 496);  // 0 + 1 + ... + 31
    // Without the offset-1 step an even lane holds 0 + 2 + ... + 30 = 240, an odd one 1 + 3 + ... + 31 = 256.
    CHECK(short_by_one[0] == 240);
    CHECK(short_by_one[1] == 256);
    CHECK(short_by_one[0] != 496);
}

TEST_CASE("emulator: a full mask with divergent lanes is an error naming the lane and the line", "[emulator][warp]") {
    CHECK_THROWS_WITH(
        run_per_thread(full_mask_in_a_branch),
        Catch::Contains("__shfl_xor_sync with mask 0xffffffff at emulator_test.cpp:") &&
            Catch::Contains("lane 16 is named in the mask but never gets there (it has returned from the kernel)"));
    CHECK_THROWS_WITH(run_per_thread(full_mask_in_if_and_else), Catch::Contains("the warp has diverged"));
    CHECK_THROWS_WITH(run_per_thread(early_return_then_shuffle),
                      Catch::Contains("warp 1: lane 8 is named in the mask but never gets there (it has returned"));
    CHECK_THROWS_WITH(run_per_thread(syncwarp_against_syncthreads),
                      Catch::Contains("it is waiting at __syncthreads()"));
    // A block of 48 threads: warp 1 has lanes 0..15 only, a full mask names 16 lanes that do not exist.
    CHECK_THROWS_WITH(run_per_thread(shfl_xor_1, 48), Catch::Contains("lane 16") && Catch::Contains("does not exist"));
}

TEST_CASE("emulator: masks that leave out the caller, or a source lane, are errors", "[emulator][warp]") {
    CHECK_THROWS_WITH(run_per_thread(mask_without_myself),
                      Catch::Contains("the mask 0x00000001 leaves out the calling lane"));
    CHECK_THROWS_WITH(run_per_thread(reads_outside_the_mask),
                      Catch::Contains("lane 8 reads lane 16, which the mask 0x0000ffff leaves out"));
}

TEST_CASE("emulator: two half-warp masks shuffle independently", "[emulator][warp]") {
    const std::vector<int> out = run_per_thread(half_warp_masks);
    for (int t = 0; t < 64; ++t) CHECK(out[t] == (t ^ 1));
}

TEST_CASE("emulator: warp primitives refuse the threads schedule instead of hanging", "[emulator][warp]") {
    CHECK_THROWS_WITH(run_per_thread(shfl_xor_1, 64, Schedule::threads), Catch::Contains("fiber schedules only"));
}

TEST_CASE("emulator: lanes are not in lockstep: warp-synchronous code needs __syncwarp", "[emulator][warp]") {
    // With __syncwarp between reading and writing, the tree sum is 496 in every warp, whatever
    // order the lanes run in. Without it, the fiber schedule runs lane 0 to the end first, and it
    // reads partial[16] before lane 16 has written it: a wrong sum -- the bug that Volta's
    // independent thread scheduling exposed on real GPUs. (Run backwards, every lane finds its
    // partner already finished, which happens to give the right sum: one order is enough to fail.)
    for (Schedule s : {Schedule::fibers, Schedule::fibers_reversed}) {
        INFO("schedule " << name(s));
        CHECK(run_per_thread(shared_tree_sum<true>, 64, s)[0] == 496);
    }
    CHECK(run_per_thread(shared_tree_sum<false>, 64, Schedule::fibers)[0] != 496);
}

// ---------------------------------------------------------------------------------------------
// Shared-memory banks: one warp, one access each, hand-counted wavefronts.

namespace {

template <int Cols>
__global__ void column_read(global_ptr<int> out) {  // lane l reads (l, 0): words l * Cols
    __shared__ shared_tile<float, 32, Cols> tile;
    out[threadIdx.x] = int(tile(int(threadIdx.x), 0));
}
__global__ void row_read(global_ptr<int> out) {  // lane l reads (0, l): 32 consecutive words
    __shared__ shared_tile<float, 32, 32> tile;
    out[threadIdx.x] = int(tile(0, int(threadIdx.x)));
}
__global__ void broadcast_read(global_ptr<int> out) {  // every lane reads (3, 3): one word
    __shared__ shared_tile<float, 32, 32> tile;
    out[threadIdx.x] = int(tile(3, 3));
}
__global__ void stride_two_read(global_ptr<int> out) {  // words 0, 2, ..., 62: two per even bank
    __shared__ shared_tile<float, 1, 64> tile;
    out[threadIdx.x] = int(tile(0, 2 * int(threadIdx.x)));
}
__global__ void half_row_read(global_ptr<int> out) {  // 32 halves = 16 words, two lanes per word
    __shared__ shared_tile<__half, 1, 64> tile;
    out[threadIdx.x] = int(float(tile(0, int(threadIdx.x))));
}
__global__ void shared_index_past_the_end(global_ptr<int> out) {
    __shared__ shared_tile<float, 32, 32> tile;
    out[threadIdx.x] = int(tile(int(threadIdx.x) + 1, 0));  // lane 31 reads row 32
}

SharedTraffic banks_of(void (*kernel)(global_ptr<int>)) {
    std::vector<int> out(32);
    return launch(dim3(1), dim3(32), kernel, global_ptr<int>(out.data(), out.size())).shared;
}

}  // namespace

TEST_CASE("emulator: shared-memory requests are counted in wavefronts of 32 four-byte banks", "[emulator][banks]") {
    const SharedTraffic column = banks_of(column_read<32>), padded = banks_of(column_read<33>),
                        row = banks_of(row_read), broadcast = banks_of(broadcast_read),
                        stride = banks_of(stride_two_read), halves = banks_of(half_row_read);
    CHECK(column.accesses == 32);
    CHECK(column.requests == 1);
    CHECK(column.wavefronts == 32);  // 32 words, all in bank 0
    CHECK(column.conflicts() == 31);
    CHECK(padded.wavefronts == 1);  // rows of 33 words: lane l's word is in bank l
    CHECK(row.wavefronts == 1);
    CHECK(broadcast.wavefronts == 1);
    CHECK(stride.wavefronts == 2);
    CHECK(halves.wavefronts == 1);
    CHECK_THROWS_WITH(
        banks_of(shared_index_past_the_end),
        Catch::Contains("shared memory index out of bounds: (32, 0) of a (32, 32) tile at emulator_test.cpp:"));
}

// ---------------------------------------------------------------------------------------------
// Races on shared tiles: a missing __syncthreads() or __syncwarp() is reported with both lines.

namespace {

template <bool with_barrier>
__global__ void reverse_through_tile(global_ptr<int> out) {
    __shared__ shared_tile<int, 1, 64> tile;
    const int t = int(threadIdx.x);
    tile(0, t) = t;  // the write
    if (with_barrier) __syncthreads();
    out[t] = tile(0, 63 - t);  // the read
}

// Lanes pass values through a tile instead of a shuffle: ordered by __syncwarp, or not at all.
template <bool with_syncwarp>
__global__ void rotate_through_tile(global_ptr<int> out) {
    __shared__ shared_tile<int, 1, 32> tile;
    const int lane = int(threadIdx.x);
    tile(0, lane) = lane * 10;
    if (with_syncwarp) __syncwarp();
    out[lane] = tile(0, (lane + 1) % 32);
}

std::vector<int> run_ints(void (*kernel)(global_ptr<int>), unsigned threads, Schedule s = Schedule::fibers) {
    std::vector<int> out(threads, -1);
    launch(s, dim3(2), dim3(threads), kernel, global_ptr<int>(out.data(), out.size()));
    return out;
}

}  // namespace

TEST_CASE("emulator: a shared tile read before its writer passed __syncthreads is a race naming both lines",
          "[emulator][race]") {
    const std::vector<int> ok = run_ints(reverse_through_tile<true>, 64);
    for (int t = 0; t < 64; ++t) CHECK(ok[std::size_t(t)] == 63 - t);
    for (Schedule s : {Schedule::fibers, Schedule::fibers_reversed}) {
        INFO("schedule " << name(s));
        // Forwards, thread 0 reads element 63 first (not written yet in this block), and thread
        // 63 then overwrites what thread 0 read; backwards, thread 0 reads what thread 63 wrote.
        CHECK_THROWS_WITH(run_ints(reverse_through_tile<false>, 64, s),
                          Catch::Contains("shared memory race in block (0,0,0)") &&
                              Catch::Contains("of a shared tile at emulator_test.cpp:") &&
                              Catch::Contains("a __syncthreads() is missing between the two lines"));
    }
    // The threads schedule is for ThreadSanitizer, which finds such races itself.
    CHECK(run_ints(reverse_through_tile<true>, 64, Schedule::threads)[0] == 63);
}

namespace {

// Two rounds through one tile with a barrier after each write but none before the second write:
// the second round overwrites what other threads are still reading from the first.
__global__ void two_rounds_without_the_second_barrier(global_ptr<int> out) {
    __shared__ shared_tile<int, 1, 64> tile;
    const int t = int(threadIdx.x);
    int sum = 0;
    for (int round = 0; round < 2; ++round) {
        tile(0, t) = t + round;  // the write
        __syncthreads();
        sum += tile(0, 63 - t);  // the read
    }
    out[t] = sum;
}

}  // namespace

TEST_CASE("emulator: with the bank model off, accesses are counted, requests are not, and races are still found",
          "[emulator][banks][race]") {
    set_bank_model(false);
    const SharedTraffic column = banks_of(column_read<32>);
    const bool race_found = [] {
        try {
            run_ints(reverse_through_tile<false>, 64);
        } catch (const launch_error& e) {
            return std::string(e.what()).find("shared memory race") != std::string::npos;
        }
        return false;
    }();
    set_bank_model(true);
    CHECK(column.accesses == 32);
    CHECK(column.requests == 0);
    CHECK(column.wavefronts == 0);
    CHECK(race_found);
    CHECK(banks_of(column_read<32>).wavefronts == 32);  // on again: counted
}

TEST_CASE("emulator: a race says between which of the block's barriers it happened", "[emulator][race]") {
    CHECK_THROWS_WITH(run_ints(reverse_through_tile<false>, 64),
                      Catch::Contains("before the block's first __syncthreads(): a __syncthreads() is missing"));
    // Thread 0 runs its second write before thread 1 has read the first round: both after barrier 1.
    CHECK_THROWS_WITH(run_ints(two_rounds_without_the_second_barrier, 64),
                      Catch::Contains("since the block's 1st __syncthreads(): a __syncthreads() is missing"));
}

TEST_CASE("emulator: lanes of a warp are ordered by __syncwarp, and racing without it", "[emulator][race]") {
    const std::vector<int> ok = run_ints(rotate_through_tile<true>, 32);
    for (int lane = 0; lane < 32; ++lane) CHECK(ok[std::size_t(lane)] == ((lane + 1) % 32) * 10);
    CHECK_THROWS_WITH(run_ints(rotate_through_tile<false>, 32), Catch::Contains("shared memory race"));
}

// ---------------------------------------------------------------------------------------------
// wmma: one warp multiplies 16x16 tiles; expected values worked out by hand.

namespace {

namespace wmma = nvcuda::wmma;

// out (16, 16) = a b + c for a = the identity, b(k, n) = 16 k + n (stored row- or column-major),
// c = 0.5 everywhere: out(m, n) = 16 m + n + 0.5.
template <bool b_column_major>
__global__ void identity_times_b(global_ptr<float> out) {
    __shared__ shared_tile<__half, 16, 16> a_tile;
    __shared__ shared_tile<__half, 16, 16> b_tile;
    __shared__ shared_tile<float, 16, 16> d_tile;
    for (int e = int(threadIdx.x); e < 256; e += 32) {
        const int r = e / 16, c = e % 16;
        a_tile(r, c) = __half(r == c ? 1.0f : 0.0f);
        b_tile(r, c) = b_column_major ? __half(float(16 * c + r)) : __half(float(16 * r + c));  // b(k, n) either way
    }
    __syncwarp();
    using BLayout = std::conditional_t<b_column_major, wmma::col_major, wmma::row_major>;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, BLayout> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> d;
    wmma::load_matrix_sync(a, a_tile.ptr(0, 0), 16);
    wmma::load_matrix_sync(b, b_tile.ptr(0, 0), 16);
    wmma::fill_fragment(d, 0.5f);
    wmma::mma_sync(d, a, b, d);
    wmma::store_matrix_sync(d_tile.ptr(0, 0), d, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = int(threadIdx.x); e < 256; e += 32) out[e] = d_tile(e / 16, e % 16);
}

// a and b filled with 1 + 2^-12, which fp16 rounds to 1: each of the 16 products is 1, the sum 16.
__global__ void rounded_fill(global_ptr<float> out) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> d;
    wmma::fill_fragment(a, 1.0f + 0x1p-12f);
    wmma::fill_fragment(b, 1.0f + 0x1p-12f);
    wmma::fill_fragment(d, 0.0f);
    wmma::mma_sync(d, a, b, d);
    out[threadIdx.x] = d.x[0];
}

__global__ void wmma_by_half_a_warp(global_ptr<float> out) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> d;
    if (threadIdx.x < 16) wmma::fill_fragment(d, 1.0f);
    out[threadIdx.x] = 0.0f;
}

__global__ void wmma_misaligned(global_ptr<float> out) {
    __shared__ shared_tile<float, 16, 24> tile;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> d;
    wmma::load_matrix_sync(d, tile.ptr(0, 4), 24, wmma::mem_row_major);  // 16 bytes in: not 32-byte aligned
    out[threadIdx.x] = d.x[0];
}

std::vector<float> run_warp(void (*kernel)(global_ptr<float>), std::size_t n) {
    std::vector<float> out(n, -1.0f);
    launch(dim3(1), dim3(32), kernel, global_ptr<float>(out.data(), out.size()));
    return out;
}

}  // namespace

TEST_CASE("emulator: wmma loads, multiplies and stores 16x16 tiles, row- and column-major", "[emulator][wmma]") {
    for (const std::vector<float>& out :
         {run_warp(identity_times_b<false>, 256), run_warp(identity_times_b<true>, 256)}) {
        for (int m = 0; m < 16; ++m)
            for (int n = 0; n < 16; ++n) CHECK(out[std::size_t(16 * m + n)] == float(16 * m + n) + 0.5f);
    }
}

TEST_CASE("emulator: wmma rounds matrix_a and matrix_b to fp16, accumulates in fp32", "[emulator][wmma]") {
    const std::vector<float> out = run_warp(rounded_fill, 32);
    CHECK(out[0] == 16.0f);  // not 16 (1 + 2^-12)^2
    CHECK(out[31] == 16.0f);
}

TEST_CASE("emulator: wmma by part of a warp, or at a misaligned address, is an error", "[emulator][wmma]") {
    CHECK_THROWS_WITH(run_warp(wmma_by_half_a_warp, 32),
                      Catch::Contains("wmma::fill_fragment with mask 0xffffffff") && Catch::Contains("lane 16"));
    CHECK_THROWS_WITH(run_warp(wmma_misaligned, 32), Catch::Contains("32-byte (256-bit) aligned"));
}

// ---------------------------------------------------------------------------------------------
// The tiled attention kernel with both of its barriers deleted, as a learner might forget them.
// (This test executable does not link headwise::kernels, so this is the only attention_tiled.)
#define __syncthreads() ((void)0)
#include "kernels/tiled.cuh"
#undef __syncthreads

#include "headwise/reference/attention.hpp"
#include "headwise/base/random.hpp"

TEST_CASE("emulator: the tiled kernel without __syncthreads is caught by the fiber schedules", "[emulator]") {
    using namespace headwise;
    const int N = 100, D = 16;
    Random rng(5);
    const Tensor4 q = rng.normal<4>({1, 1, N, D}), k = rng.normal<4>({1, 1, N, D}), v = rng.normal<4>({1, 1, N, D});
    const std::vector<int> key_len{N};
    const Tensor4 ref = attention_reference(q, k, v);
    const kernels::AttentionArgs args{1, 1, N, D, 0.25f, false};
    auto run = [&](Schedule s) {
        Tensor4 out = Tensor4::from_shape({1, 1, N, D});
        const std::size_t n = out.size();
        launch(s, dim3(2), dim3(kernels::TiledShape<D>::rows), kernels::attention_tiled<D>,
               global_ptr<const float>(q.data(), n), global_ptr<const float>(k.data(), n),
               global_ptr<const float>(v.data(), n), global_ptr<const int>(key_len.data(), 1),
               global_ptr<float>(out.data(), n), args);
        return out;
    };
    const Tensor4 forward = run(Schedule::fibers), backward = run(Schedule::fibers_reversed);
    CHECK(max_abs_diff(forward, ref) > 1e-2);
    CHECK(max_abs_diff(backward, ref) > 1e-2);
    CHECK(max_abs_diff(forward, backward) > 1e-2);
}
