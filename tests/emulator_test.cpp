// The CPU emulator (src/emulator): indices, shared memory, barriers, traffic counts, and the
// errors a GPU would not forgive. Small kernels written here, each with a hand-checkable answer.
#include "emulator/emulator.hpp"

#include <catch2/catch.hpp>

#include <numeric>
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
        const LaunchStats stats = launch(s, dim3(blocks), dim3(n), block_sum, global_ptr<const int>(in.data(), in.size()),
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

TEST_CASE("emulator: reading past the end of a buffer is an error naming the block and thread", "[emulator]") {
    const int n = 100;
    std::vector<float> in(n, 1.0f), out(1);
    for (Schedule s : all_schedules) {
        INFO("schedule " << name(s));
        // i == n is thread 36 of block 1 (1 * 64 + 36 = 100).
        CHECK_THROWS_WITH(launch(s, dim3(2), dim3(64), read_one_past_the_end, global_ptr<const float>(in.data(), n),
                                 global_ptr<float>(out.data(), 1), n),
                          Catch::Contains("index 100 of a 100-element buffer") &&
                              Catch::Contains("block (1,0,0) thread (36,0,0)"));
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
        CHECK_THROWS_WITH(launch(s, dim3(1), dim3(32), barrier_in_a_branch, global_ptr<int>(out.data(), out.size())),
                          Catch::Contains("__syncthreads() reached 1 times by thread (0,0,0) but 0 times by thread (5,0,0)"));
    }
}

TEST_CASE("emulator: launch configurations CUDA would reject are rejected", "[emulator]") {
    std::vector<int> out(2048);
    const global_ptr<int> o(out.data(), out.size());
    CHECK_THROWS_WITH(launch(dim3(1), dim3(2048), barrier_in_a_branch, o), Catch::Contains("limited to (1024, 1024, 64)"));
    CHECK_THROWS_WITH(launch(dim3(1), dim3(64, 32), barrier_in_a_branch, o), Catch::Contains("at most 1024 threads per block"));
    CHECK_THROWS_WITH(launch(dim3(0), dim3(32), barrier_in_a_branch, o), Catch::Contains("at least 1"));
    CHECK_THROWS_WITH(launch(dim3(1, 70000), dim3(32), barrier_in_a_branch, o), Catch::Contains("65535"));
}

TEST_CASE("emulator: __syncthreads outside a kernel is an error, not a hang", "[emulator]") {
    CHECK_THROWS_AS(__syncthreads(), launch_error);
}

// ---------------------------------------------------------------------------------------------
// The tiled attention kernel with both of its barriers deleted, as a learner might forget them.
// (This test executable does not link headwise::kernels, so this is the only attention_tiled.)
#define __syncthreads() ((void)0)
#include "kernels/tiled.cuh"
#undef __syncthreads

#include "headwise/attention.hpp"
#include "headwise/random.hpp"

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
        launch(s, dim3(2), dim3(kernels::TiledShape<D>::rows), kernels::attention_tiled<D>, global_ptr<const float>(q.data(), n),
               global_ptr<const float>(k.data(), n), global_ptr<const float>(v.data(), n),
               global_ptr<const int>(key_len.data(), 1), global_ptr<float>(out.data(), n), args);
        return out;
    };
    const Tensor4 forward = run(Schedule::fibers), backward = run(Schedule::fibers_reversed);
    CHECK(max_abs_diff(forward, ref) > 1e-2);
    CHECK(max_abs_diff(backward, ref) > 1e-2);
    CHECK(max_abs_diff(forward, backward) > 1e-2);
}
