// The attention kernels (src/kernels), run on the CPU emulator and checked against
// headwise::attention_reference (plain loops in double precision): an independent oracle.
#include "kernels/attention_kernels.hpp"

#include "headwise/attention.hpp"
#include "headwise/random.hpp"
#include "cuda/tolerance.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace headwise;
using kernels::Problem;
using kernels::Version;
using emulator::Schedule;

namespace {

// q, k, v (B, H, N, d_head) with N(0, 1) entries, and key_len (B).
struct Case {
    Problem p;
    Tensor4 q, k, v;
    std::vector<int> key_len;
};

Case make_case(int batch, int heads, int seq, int d_head, bool causal, std::uint64_t seed = 1) {
    Random rng(seed);
    Case c;
    c.p.batch = batch, c.p.heads = heads, c.p.seq = seq, c.p.d_head = d_head, c.p.causal = causal;
    const std::array<std::size_t, 4> shape{std::size_t(batch), std::size_t(heads), std::size_t(seq), std::size_t(d_head)};
    c.q = rng.normal<4>(shape);
    c.k = rng.normal<4>(shape);
    c.v = rng.normal<4>(shape);
    c.key_len.assign(std::size_t(batch), seq);
    return c;
}

Tensor4 run(Version version, const Case& c, Schedule schedule = emulator::default_schedule(),
            emulator::LaunchStats* stats = nullptr) {
    Tensor4 out = Tensor4::from_shape(c.q.shape());  // (B, H, N, d_head)
    out.fill(12345.0f);                              // anything the kernel forgets to write shows
    const auto s = kernels::emulate(version, c.p, {c.q.data(), c.k.data(), c.v.data(), c.key_len.data()}, out.data(),
                                    schedule);
    if (stats != nullptr) *stats = s;
    return out;
}

Tensor4 reference(const Case& c) {
    AttentionOptions o;
    o.causal = c.p.causal;
    Mask2 padding = Mask2::from_shape({std::size_t(c.p.batch), std::size_t(c.p.seq)});  // (B, N), true = padding
    for (int b = 0; b < c.p.batch; ++b)
        for (int j = 0; j < c.p.seq; ++j) padding(b, j) = j >= c.key_len[std::size_t(b)];
    o.key_padding_mask = &padding;
    return attention_reference(c.q, c.k, c.v, o);
}

double excess_error(const Tensor4& out, const Tensor4& ref) {
    return test::excess_error(out.data(), ref.data(), ref.size());
}

std::string describe(Version v, const Problem& p) {
    return std::string(kernels::name(v)) + " B=" + std::to_string(p.batch) + " H=" + std::to_string(p.heads) +
           " N=" + std::to_string(p.seq) + " d_head=" + std::to_string(p.d_head) + (p.causal ? " causal" : "");
}

}  // namespace

TEST_CASE("kernels: every version matches the CPU reference on awkward sizes", "[kernels]") {
    const int seq = GENERATE(1, 17, 64, 100, 257);
    const int d_head = GENERATE(8, 64);
    const bool causal = GENERATE(false, true);
    // Two sequences of two heads up to N = 64, fewer above: the double-precision reference is
    // what dominates a Debug + ASan run, and batch and head indexing are already exercised.
    const int batch = seq <= 64 ? 2 : 1, heads = seq <= 100 ? 2 : 1;
    const Case c = make_case(batch, heads, seq, d_head, causal, std::uint64_t(seq * 1000 + d_head));
    const Tensor4 ref = reference(c);
    for (Version v : kernels::versions) {
        INFO(describe(v, c.p));
        CHECK(excess_error(run(v, c), ref) == 0.0);
    }
}

TEST_CASE("kernels: padded keys are ignored and a sequence with no keys gives zeros", "[kernels]") {
    const bool causal = GENERATE(false, true);
    Case c = make_case(3, 2, 70, 16, causal);
    c.key_len = {70, 23, 0};  // full, padded after 23 keys (a partial tile), fully padded
    const Tensor4 ref = reference(c);
    for (Version v : kernels::versions) {
        INFO(describe(v, c.p));
        const Tensor4 out = run(v, c);
        CHECK(excess_error(out, ref) == 0.0);
        bool zeros = true;  // sequence 2: every query row is fully masked
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t i = 0; i < 70; ++i)
                for (std::size_t d = 0; d < 16; ++d) zeros = zeros && out(2, h, i, d) == 0.0f;
        CHECK(zeros);
    }
}

TEST_CASE("kernels: logits of +-1e4 stay finite and correct", "[kernels]") {
    Case c = make_case(1, 1, 50, 8, false);
    c.q *= 300.0f;  // q . k / sqrt(8) reaches ~1e4: exp() would overflow without the max shift
    const Tensor4 ref = reference(c);
    for (Version v : kernels::versions) {
        INFO(describe(v, c.p));
        const Tensor4 out = run(v, c);
        CHECK(std::all_of(out.begin(), out.end(), [](float x) { return std::isfinite(x); }));
        // A float holds a score of 1e4 only to about +-1e-3, so the weights (and the output, an
        // average of N(0, 1) values) may be off by that much; an overflow would give NaN or inf.
        CHECK(max_abs_diff(out, ref) < 5e-3);
    }
}

TEST_CASE("kernels: the three emulator schedules give bit-identical outputs", "[kernels]") {
    // A race-free kernel cannot depend on the order its threads run in.
    const Case c = make_case(1, 2, 100, 64, true);
    for (Version v : kernels::versions) {
        INFO(describe(v, c.p));
        const Tensor4 forward = run(v, c, Schedule::fibers);
        CHECK(max_abs_diff(forward, run(v, c, Schedule::fibers_reversed)) == 0.0);
        CHECK(max_abs_diff(forward, run(v, c, Schedule::threads)) == 0.0);
    }
}

TEST_CASE("kernels: the counted traffic is what the kernels' loops read and write", "[kernels]") {
    // Expected counts derived from the loops by hand (element accesses, per (b, h)):
    //   naive   per row with e visible keys: loads 1 + e*2D + e + D*e*2, stores 2e + D
    //   online  per row: loads 1 + D + e*2D, stores D
    //   tiled   per block of 64 rows: 64 loads of key_len (spare threads too) + rows*D for q,
    //           2*D per key row of every tile loaded, stores rows*D; 2 barriers per tile
    const bool causal = GENERATE(false, true);
    Case c = make_case(2, 3, 100, 16, causal);
    c.key_len = {100, 37};
    const std::uint64_t D = 16, N = 100, H = 3;
    auto end_of = [&](std::uint64_t i, int b) {
        const std::uint64_t len = std::uint64_t(c.key_len[std::size_t(b)]);
        return causal ? std::min(i + 1, len) : len;
    };
    std::uint64_t naive_loads = 0, naive_stores = 0, online_loads = 0, online_stores = 0;
    std::uint64_t tiled_loads = 0, tiled_stores = 0, tiled_barriers = 0;
    for (int b = 0; b < 2; ++b) {
        for (std::uint64_t i = 0; i < N; ++i) {
            const std::uint64_t e = end_of(i, b);
            naive_loads += H * (1 + e * 2 * D + e + D * e * 2);
            naive_stores += H * (2 * e + D);
            online_loads += H * (1 + D + e * 2 * D);
            online_stores += H * D;
        }
        for (std::uint64_t q0 = 0; q0 < N; q0 += 64) {
            const std::uint64_t rows = std::min<std::uint64_t>(64, N - q0);
            const std::uint64_t block_end = end_of(q0 + rows - 1, b);
            tiled_loads += H * (64 + rows * D);
            for (std::uint64_t k0 = 0; k0 < block_end; k0 += 64) {
                tiled_loads += H * 2 * D * std::min<std::uint64_t>(64, block_end - k0);
                tiled_barriers += H * 2;
            }
            tiled_stores += H * rows * D;
        }
    }
    emulator::LaunchStats naive, online, tiled;
    run(Version::naive, c, emulator::default_schedule(), &naive);
    run(Version::online, c, emulator::default_schedule(), &online);
    run(Version::tiled, c, emulator::default_schedule(), &tiled);
    CHECK(naive.traffic.loads == naive_loads);
    CHECK(naive.traffic.stores == naive_stores);
    CHECK(online.traffic.loads == online_loads);
    CHECK(online.traffic.stores == online_stores);
    CHECK(tiled.traffic.loads == tiled_loads);
    CHECK(tiled.traffic.stores == tiled_stores);
    CHECK(tiled.barriers == tiled_barriers);
    CHECK(tiled.traffic.load_bytes == 4 * tiled_loads);  // floats and ints are 4 bytes each
}

TEST_CASE("kernels: causal tiles above the diagonal are never loaded", "[kernels]") {
    // N = 257, tiles of 64: query block r (rows 64r ..) needs key tiles 0..r only, so the causal
    // launch loads 1 + 2 + 3 + 4 + 5 = 15 tiles where the full one loads 5 * 5 = 25.
    emulator::LaunchStats full, causal;
    run(Version::tiled, make_case(1, 1, 257, 8, false), emulator::default_schedule(), &full);
    run(Version::tiled, make_case(1, 1, 257, 8, true), emulator::default_schedule(), &causal);
    CHECK(full.barriers == 2 * 25);
    CHECK(causal.barriers == 2 * 15);
}

TEST_CASE("kernels: launch configurations follow each version's layout", "[kernels]") {
    Problem p;
    p.batch = 2, p.heads = 3, p.seq = 100, p.d_head = 64;
    const auto naive = kernels::launch_config(Version::naive, p);
    CHECK(naive.grid == std::array<unsigned, 3>{2, 3, 2});  // ceil(100 / 64) query blocks, H, B
    CHECK(naive.block == std::array<unsigned, 3>{64, 1, 1});
    CHECK(naive.shared_bytes == 0);
    CHECK(naive.scratch_floats == 2u * 3 * 100 * 100);  // (B, H, N, N)
    const auto tiled = kernels::launch_config(Version::tiled, p);
    CHECK(tiled.grid == std::array<unsigned, 3>{2, 3, 2});
    CHECK(tiled.shared_bytes == 2u * 64 * 64 * 4);  // K and V tiles of 64 rows x 64 floats
    p.d_head = 128;
    CHECK(kernels::launch_config(Version::tiled, p).shared_bytes == 2u * 32 * 128 * 4);  // 32-row tiles
}

TEST_CASE("kernels: problems without a compiled kernel are refused, naive takes any d_head", "[kernels]") {
    const Case c = make_case(1, 2, 20, 12, false);
    CHECK_THROWS_WITH(run(Version::online, c), Catch::Contains("no build for d_head 12"));
    CHECK_THROWS_WITH(run(Version::tiled, c), Catch::Contains("no build for d_head 12"));
    CHECK(excess_error(run(Version::naive, c), reference(c)) == 0.0);
    Case bad = make_case(2, 1, 20, 8, false);
    bad.key_len = {20, 21};
    CHECK_THROWS_WITH(run(Version::tiled, bad), Catch::Contains("key_len[1] = 21 is outside [0, N = 20]"));
}
