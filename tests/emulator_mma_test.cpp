// The emulator's PTX tensor-core primitives (src/emulator/mma.hpp through src/kernels/mma.cuh):
// mma.sync m16n8k16 against a plain matrix product, ldmatrix's element placement, cp.async's
// pending copies, and the bank count of swizzled tiles. The kernels here place fragment elements
// with the PTX ISA's formulas written out afresh (not with emulator/fragment_layout.hpp), so a
// wrong layout in the emulator shows as a wrong product.
#include "kernels/mma.cuh"

#include "emulator/fragment_layout.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace headwise::emulator;
using headwise::kernels::pack;

namespace {

// The ISA's tables, as a learner would copy them: lane = 4 * group + quad.
//   A: registers {(g, 2q), (g + 8, 2q), (g, 2q + 8), (g + 8, 2q + 8)}, each with its right neighbour
//   B: registers {(2q, g), (2q + 8, g)}, each with the element below (k + 1)
//   C: {(g, 2q), (g, 2q + 1), (g + 8, 2q), (g + 8, 2q + 1)}
constexpr int a_row[4] = {0, 8, 0, 8}, a_col[4] = {0, 0, 8, 8};

// D (16, 8) = A (16, 16) B (16, 8) + C, all row-major in global memory; `swap` exchanges two of
// A's registers, the mistake of a kernel that indexes its fragment wrongly.
template <class T>
__global__ void mma_tile(global_ptr<const T> a, global_ptr<const T> b, global_ptr<const float> c, global_ptr<float> d,
                         bool swap) {
    const int lane = int(threadIdx.x), g = lane / 4, q = lane % 4;
    std::uint32_t ra[4], rb[2];
    float rc[4], rd[4];
    for (int r = 0; r < 4; ++r) {
        const int row = g + a_row[r], col = 2 * q + a_col[r];
        ra[r] = pack<T>(float(T(a[row * 16 + col])), float(T(a[row * 16 + col + 1])));
    }
    if (swap) std::swap(ra[1], ra[2]);
    for (int r = 0; r < 2; ++r) {
        const int k = 2 * q + 8 * r;
        rb[r] = pack<T>(float(T(b[k * 8 + g])), float(T(b[(k + 1) * 8 + g])));
    }
    for (int i = 0; i < 4; ++i) rc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * q + i % 2];
    headwise::kernels::mma_m16n8k16<T>(rd, ra, rb, rc);
    for (int i = 0; i < 4; ++i) d[(g + 8 * (i / 2)) * 8 + 2 * q + i % 2] = rd[i];
}

template <class T>
double mma_error(bool swap, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<T> a(256), b(128);
    std::vector<float> c(128), d(128, 12345.0f);
    for (T& x : a) x = T(normal(rng));
    for (T& x : b) x = T(normal(rng));
    for (float& x : c) x = normal(rng);
    launch(dim3(1), dim3(32), mma_tile<T>, global_ptr<const T>(a.data(), 256), global_ptr<const T>(b.data(), 128),
           global_ptr<const float>(c.data(), 128), global_ptr<float>(d.data(), 128), swap);
    double worst = 0.0;
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
            double want = c[i * 8 + j];
            for (int k = 0; k < 16; ++k) want += double(float(a[i * 16 + k])) * double(float(b[k * 8 + j]));
            worst = std::max(worst, std::abs(want - double(d[i * 8 + j])));
        }
    return worst;
}

// A (32, 64) 16-bit tile whose element (r, c) holds the bits r * 64 + c: what a lane receives
// names where it came from. Lane l gives row address (l % 16, 8 * (l / 16)) -- matrices 0 and 1
// are rows 0-7 and 8-15 of columns 0-7, matrices 2 and 3 the same rows of columns 8-15.
template <int Count, bool Trans>
__global__ void ldmatrix_placement(global_ptr<std::uint32_t> out) {
    __shared__ shared_tile<__half, 32, 64> tile;
    const int t = int(threadIdx.x);
    for (int e = t; e < 32 * 64; e += 32) tile(e / 64, e % 64) = __ushort_as_half(static_cast<unsigned short>(e));
    __syncthreads();
    std::uint32_t d[Count];
    headwise::kernels::ldmatrix<Count, Trans>(d, tile, t % 16, 8 * (t / 16));
    for (int m = 0; m < Count; ++m) out[t * 4 + m] = d[m];
}

template <int Count, bool Trans>
void check_ldmatrix() {
    std::vector<std::uint32_t> out(128, 0xdeadbeef);
    launch(dim3(1), dim3(32), ldmatrix_placement<Count, Trans>, global_ptr<std::uint32_t>(out.data(), out.size()));
    for (int l = 0; l < 32; ++l)
        for (int m = 0; m < Count; ++m)
            for (int i = 0; i < 2; ++i) {
                // Matrix m starts at row 8 (m % 2), column 8 (m / 2). The ISA: lane l holds row
                // l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 -- transposed, rows and columns swap.
                const int row = Trans ? 2 * (l % 4) + i : l / 4, col = Trans ? l / 4 : 2 * (l % 4) + i;
                const std::uint32_t want = std::uint32_t((8 * (m % 2) + row) * 64 + 8 * (m / 2) + col);
                INFO("x" << Count << (Trans ? ".trans" : "") << " lane " << l << " matrix " << m << " half " << i);
                CHECK(((out[std::size_t(l * 4 + m)] >> (16 * i)) & 0xffffu) == want);
            }
}

// Rows of 64 halves (128 bytes: every row starts at bank 0); each warp ldmatrix_x4-loads 8 rows of
// each 16-byte chunk, the chunk stored where `Swizzle` says.
enum class Swizzle { none, right, wrong };
template <Swizzle S>
__global__ void ldmatrix_from_swizzled(global_ptr<float> out) {
    __shared__ shared_tile<__half, 32, 64> tile;
    const int t = int(threadIdx.x);
    const auto stored = [](int r, int chunk) {
        if constexpr (S == Swizzle::none)
            return chunk;
        else if constexpr (S == Swizzle::right)
            return headwise::kernels::swizzle<8>(r, chunk);
        else
            return chunk ^ (r / 2 % 8);  // a mistake: rows 2i and 2i + 1 share a chunk
    };
    for (int e = t; e < 32 * 64; e += 32) tile(e / 64, e % 64) = __half(float(e));
    __syncthreads();
    float sum = 0.0f;
    for (int chunk = 0; chunk < 8; chunk += 2) {
        std::uint32_t d[4];  // matrices: rows 0-7 and 8-15 of chunks `chunk` and `chunk + 1`
        const int r = t % 16, logical = chunk + t / 16;
        headwise::kernels::ldmatrix_x4(d, tile, r, 8 * stored(r, logical));
        for (std::uint32_t x : d) sum += float(x & 0xffffu);
    }
    out[t] = sum;
}

constexpr int pending_read_line = __LINE__ + 12;  // the line of the read in copy_then_read

// Thread t copies 16 bytes (8 halves) into row t of a tile with cp.async, then reads the row
// back: after the wait and a barrier when `correct`, right away otherwise.
__global__ void copy_then_read(global_ptr<const __half> in, global_ptr<float> out, bool correct) {
    __shared__ shared_tile<__half, 32, 8> tile;
    const int t = int(threadIdx.x);
    headwise::kernels::cp_async_16(tile, t, 0, in, std::size_t(8 * t), true);
    headwise::kernels::cp_async_commit();
    if (correct) headwise::kernels::cp_async_wait<0>();
    __syncthreads();
    float sum = 0.0f;
    for (int c = 0; c < 8; ++c) sum += float(tile((t + 1) % 32, c));
    out[t] = sum;
}

// Two groups: the first waited for (wait_group 1) may be read, the second not yet.
__global__ void two_groups(global_ptr<const __half> in, global_ptr<float> out, bool read_second) {
    __shared__ shared_tile<__half, 2, 8> tile;
    const int t = int(threadIdx.x);
    headwise::kernels::cp_async_16(tile, 0, 0, in, 0, true);
    headwise::kernels::cp_async_commit();
    headwise::kernels::cp_async_16(tile, 1, 0, in, 8, t == 0);  // t != 0 would zero-fill; only t = 0 runs
    headwise::kernels::cp_async_commit();
    headwise::kernels::cp_async_wait<1>();
    out[0] = float(tile(read_second ? 1 : 0, 3));
    headwise::kernels::cp_async_wait<0>();
    out[1] = float(tile(1, 3));
}

}  // namespace

TEST_CASE("emulator mma: m16n8k16 equals the matrix product for random fp16 and bf16 tiles", "[emulator][mma]") {
    const std::uint32_t seed = GENERATE(1u, 2u, 3u);
    // Exact products, 16 fp32 additions of terms ~1 onto C: a few ulps of the sum's size.
    CHECK(mma_error<__half>(false, seed) < 1e-5);
    CHECK(mma_error<__nv_bfloat16>(false, seed) < 1e-5);
}

TEST_CASE("emulator mma: a kernel that indexes its A fragment wrongly gets a wrong product", "[emulator][mma]") {
    // Registers 1 and 2 hold rows g + 8, columns 0-7 and rows g, columns 8-15: swapped, half of
    // every dot product multiplies the wrong row. The error is of order one, not rounding.
    CHECK(mma_error<__half>(true, 1) > 0.1);
    CHECK(mma_error<__nv_bfloat16>(true, 1) > 0.1);
}

TEST_CASE("emulator mma: the layout functions give each tile element to exactly one lane", "[emulator][mma]") {
    using namespace headwise::emulator::layout;
    int a[16][16] = {}, b[16][8] = {}, c[16][8] = {};
    for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 8; ++i) ++a[mma_a(lane, i).row][mma_a(lane, i).col];
        for (int i = 0; i < 4; ++i)
            ++b[mma_b(lane, i).row][mma_b(lane, i).col], ++c[mma_c(lane, i).row][mma_c(lane, i).col];
    }
    for (int r = 0; r < 16; ++r)
        for (int col = 0; col < 16; ++col) CHECK(a[r][col] == 1);
    for (int r = 0; r < 16; ++r)
        for (int col = 0; col < 8; ++col) CHECK((b[r][col] == 1 && c[r][col] == 1));
    // Spot checks against the ISA's figures: lane 5 (group 1, quad 1).
    CHECK(mma_a(5, 0).row == 1);
    CHECK(mma_a(5, 0).col == 2);
    CHECK(mma_a(5, 3).row == 9);
    CHECK(mma_a(5, 3).col == 3);
    CHECK(mma_a(5, 6).row == 9);
    CHECK(mma_a(5, 6).col == 10);
    CHECK(mma_b(5, 3).row == 11);
    CHECK(mma_b(5, 3).col == 1);
    CHECK(mma_c(5, 2).row == 9);
    CHECK(mma_c(5, 2).col == 2);
}

TEST_CASE("emulator mma: ldmatrix x1, x2, x4 and .trans put each element where the ISA says", "[emulator][mma]") {
    check_ldmatrix<1, false>();
    check_ldmatrix<2, false>();
    check_ldmatrix<4, false>();
    check_ldmatrix<1, true>();
    check_ldmatrix<2, true>();
    check_ldmatrix<4, true>();
}

TEST_CASE("emulator mma: the bank count sees swizzled ldmatrix addresses", "[emulator][mma][banks]") {
    std::vector<float> out(32);
    const auto conflicts = [&](auto kernel) {
        return launch(dim3(1), dim3(32), kernel, global_ptr<float>(out.data(), 32)).shared;
    };
    const SharedTraffic none = conflicts(ldmatrix_from_swizzled<Swizzle::none>);
    const SharedTraffic right = conflicts(ldmatrix_from_swizzled<Swizzle::right>);
    const SharedTraffic wrong = conflicts(ldmatrix_from_swizzled<Swizzle::wrong>);
    // 4 ldmatrix_x4 = 16 matrix requests each (plus the 64 one-wavefront requests that fill the tile).
    // Unswizzled, a matrix's 8 rows sit in the same 4 banks: 8 wavefronts, 7 of them conflicts.
    CHECK(none.conflicts() == 16 * 7);
    CHECK(right.conflicts() == 0);
    // Swizzled by r / 2: rows 2i and 2i + 1 collide, 2 wavefronts per matrix.
    CHECK(wrong.conflicts() == 16 * 1);
    CHECK(right.requests == 64 + 16);
}

TEST_CASE("emulator mma: reading a cp.async destination before its wait is a race naming the line",
          "[emulator][mma][race]") {
    std::vector<__half> in(256);
    for (int e = 0; e < 256; ++e) in[std::size_t(e)] = __half(float(e % 13));
    std::vector<float> out(32);
    const global_ptr<const __half> src(in.data(), in.size());
    launch(dim3(1), dim3(32), copy_then_read, src, global_ptr<float>(out.data(), 32), true);
    for (int t = 0; t < 32; ++t) {
        float want = 0.0f;
        for (int c = 0; c < 8; ++c) want += float(in[std::size_t(8 * ((t + 1) % 32) + c)]);
        CHECK(out[std::size_t(t)] == want);
    }
    const std::string line = "emulator_mma_test.cpp:" + std::to_string(pending_read_line);
    CHECK_THROWS_WITH(launch(dim3(1), dim3(32), copy_then_read, src, global_ptr<float>(out.data(), 32), false),
                      Catch::Contains("reads element") && Catch::Contains(line) && Catch::Contains("cp.async") &&
                          Catch::Contains("cp.async.wait_group"));
}

TEST_CASE("emulator mma: cp.async.wait_group N lands all groups but the newest N", "[emulator][mma][race]") {
    std::vector<__half> in(16);
    for (int e = 0; e < 16; ++e) in[std::size_t(e)] = __half(float(e));
    std::vector<float> out(2);
    const global_ptr<const __half> src(in.data(), in.size());
    launch(dim3(1), dim3(1), two_groups, src, global_ptr<float>(out.data(), 2), false);
    CHECK(out[0] == 3.0f);
    CHECK(out[1] == 11.0f);
    CHECK_THROWS_WITH(launch(dim3(1), dim3(1), two_groups, src, global_ptr<float>(out.data(), 2), true),
                      Catch::Contains("cp.async"));
}
