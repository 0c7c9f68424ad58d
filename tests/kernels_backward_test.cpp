// The attention backward kernels (src/kernels/backward_*.cuh), run on the CPU emulator and checked
// against headwise::attention_backward_reference (plain loops in double precision): an independent
// oracle. Also the forward's log-sum-exp output they depend on, and their counted traffic.
#include "kernels/attention_backward.hpp"

#include "headwise/base/random.hpp"
#include "headwise/reference/attention.hpp"
#include "headwise/reference/attention_backward.hpp"
#include "cuda/tolerance.hpp"
#include "kernel_cases.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace headwise;
using emulator::Schedule;
using kernels::BackwardVersion;
using kernels::Problem;

using test::Case;
using test::make_case;
using test::sanitized;

namespace {

struct Grads {
    Tensor4 dq, dk, dv;  // (B, H, N, d_head) each
};

Grads run(BackwardVersion version, const Case& c, Schedule schedule = emulator::default_schedule(),
          kernels::BackwardStats* stats = nullptr) {
    Grads g{Tensor4::from_shape(c.q.shape()), Tensor4::from_shape(c.q.shape()), Tensor4::from_shape(c.q.shape())};
    for (Tensor4* t : {&g.dq, &g.dk, &g.dv}) t->fill(12345.0f);  // anything the kernels forget to write shows
    const auto s =
        kernels::emulate_backward(version, c.p, {c.q.data(), c.k.data(), c.v.data(), c.key_len.data(), c.d_out.data()},
                                  {g.dq.data(), g.dk.data(), g.dv.data()}, schedule);
    if (stats != nullptr) *stats = s;
    return g;
}

AttentionOptions options(const Case& c, Mask2& padding) {
    AttentionOptions o;
    o.causal = c.p.causal;
    padding = Mask2::from_shape({std::size_t(c.p.batch), std::size_t(c.p.seq)});  // (B, N), true = padding
    for (int b = 0; b < c.p.batch; ++b)
        for (int j = 0; j < c.p.seq; ++j) padding(b, j) = j >= c.key_len[std::size_t(b)];
    o.key_padding_mask = &padding;
    return o;
}

AttentionGrads reference(const Case& c) {
    Mask2 padding;
    return attention_backward_reference(c.q, c.k, c.v, c.d_out, options(c, padding));
}

// Within fp32's tolerance for a gradient, on the scale of all three of ref's (tests/cuda/tolerance.hpp):
// 0 = within.
double excess(const Tensor4& g, const Tensor4& expected, const AttentionGrads& ref) {
    return test::gradient_excess_error(g.data(), expected.data(), expected.size(), test::gradients_scale(ref));
}

std::string describe(BackwardVersion v, const Case& c) {
    std::string keys;
    for (int len : c.key_len) {
        if (!keys.empty()) keys += ',';
        keys += std::to_string(len);
    }
    return std::string(kernels::name(v)) + " B=" + std::to_string(c.p.batch) + " H=" + std::to_string(c.p.heads) +
           " N=" + std::to_string(c.p.seq) + " d_head=" + std::to_string(c.p.d_head) + (c.p.causal ? " causal" : "") +
           " key_len " + keys;
}

void check_against_reference(BackwardVersion v, const Case& c, const AttentionGrads& ref) {
    INFO(describe(v, c));
    const Grads g = run(v, c);
    CHECK(excess(g.dq, ref.dq, ref) == 0.0);
    CHECK(excess(g.dk, ref.dk, ref) == 0.0);
    CHECK(excess(g.dv, ref.dv, ref) == 0.0);
}

}  // namespace

TEST_CASE("backward kernels: both versions match the double-precision reference, causal and padded",
          "[kernels][backward]") {
    // N = 1 (one key), 17 (a partial key tile and query tile), 100 (several of each, a partial
    // last one), 1000 (31 + 1 key tiles at d_head 16, padding at 611 keys: mid-tile). Two
    // sequences, the second padded after about half its keys, two heads up to N = 100.
    const int seq = GENERATE(1, 17, 100, 1000);
    const bool causal = GENERATE(false, true);
    const int d_head = seq <= 100 ? GENERATE(16, 64) : 16;
    if (sanitized && seq > 100) return;  // the double loops and the emulator, both under ASan: minutes
    const int heads = seq <= 100 ? 2 : 1;
    Case c = make_case(2, heads, seq, d_head, causal, std::uint64_t(seq * 100 + d_head + causal));
    c.key_len = {seq, seq == 1000 ? 611 : (seq + 1) / 2};
    const AttentionGrads ref = reference(c);
    for (BackwardVersion v : kernels::backward_versions) check_against_reference(v, c, ref);
}

TEST_CASE("backward kernels: d_head 8, 32 and 128 have their own tiles and match too", "[kernels][backward]") {
    // N = 45 (a partial tile each way), and N = 1, where dq and dk are 0 in exact arithmetic.
    const int d_head = GENERATE(8, 32, 128);
    const int seq = GENERATE(45, 1);
    Case c = make_case(1, 2, seq, d_head, true, std::uint64_t(d_head));
    c.key_len = {seq == 1 ? 1 : 40};
    const AttentionGrads ref = reference(c);
    for (BackwardVersion v : kernels::backward_versions) check_against_reference(v, c, ref);
}

TEST_CASE("backward kernels: a sequence with every key padded gets zero gradients, and its keys too",
          "[kernels][backward]") {
    const bool causal = GENERATE(false, true);
    Case c = make_case(3, 2, 40, 16, causal, 3);
    c.key_len = {40, 23, 0};
    const AttentionGrads ref = reference(c);
    for (BackwardVersion v : kernels::backward_versions) {
        INFO(describe(v, c));
        const Grads g = run(v, c);
        CHECK(excess(g.dq, ref.dq, ref) == 0.0);
        CHECK(excess(g.dk, ref.dk, ref) == 0.0);
        CHECK(excess(g.dv, ref.dv, ref) == 0.0);
        bool zeros = true;  // sequence 2: nothing seen, nothing learned; sequence 1: keys 23.. are padding
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t i = 0; i < 40; ++i)
                for (std::size_t d = 0; d < 16; ++d) {
                    zeros = zeros && g.dq(2, h, i, d) == 0.0f && g.dk(2, h, i, d) == 0.0f && g.dv(2, h, i, d) == 0.0f;
                    if (i >= 23) zeros = zeros && g.dk(1, h, i, d) == 0.0f && g.dv(1, h, i, d) == 0.0f;
                }
        CHECK(zeros);
    }
}

TEST_CASE("backward kernels: the tolerance catches a kernel that drops one key", "[kernels][backward]") {
    // The bound is not so loose that anything passes: gradients computed with the last key of
    // each row hidden (key_len N - 1) are far outside it against the full problem's reference.
    Case c = make_case(1, 2, 40, 16, false, 5);
    const AttentionGrads ref = reference(c);
    Case fewer = c;
    fewer.key_len = {39};
    for (BackwardVersion v : kernels::backward_versions) {
        INFO(describe(v, c));
        const Grads g = run(v, fewer);
        CHECK(excess(g.dq, ref.dq, ref) > 0.0);
        CHECK(excess(g.dv, ref.dv, ref) > 0.0);
    }
}

TEST_CASE("backward kernels: a gradient that is zero in exact arithmetic is judged on the problem's scale",
          "[kernels][backward]") {
    // One key: dS = 1 (dP - D) = 0, so dq and dk are 0 exactly, and fp32 may leave rounding in them
    // (an H100 run of naive_backward did). That passes on dv's scale; an error of 1e-2 of it does not.
    const std::vector<float> zero(8, 0.0f), rounding(8, 2.4e-7f), wrong(8, 0.03f);
    const double dv_scale = 3.0;
    CHECK(test::gradient_excess_error(rounding.data(), zero.data(), zero.size(), dv_scale) == 0.0);
    CHECK(test::gradient_excess_error(wrong.data(), zero.data(), zero.size(), dv_scale) > 0.0);
    CHECK(test::gradient_excess_error(rounding.data(), zero.data(), zero.size(), 0.0) > 0.0);
}

TEST_CASE("backward kernels: the forward's log-sum-exp is log sum_j exp(s_ij), -inf for a fully masked row",
          "[kernels][backward]") {
    Case c = make_case(2, 1, 30, 8, true, 7);
    c.key_len = {30, 0};
    std::vector<float> out(c.q.size()), lse(2 * 30);
    kernels::emulate_with_lse(c.p, {c.q.data(), c.k.data(), c.v.data(), c.key_len.data()}, out.data(), lse.data());
    const double scale = 1.0 / std::sqrt(8.0);
    for (std::size_t i = 0; i < 30; ++i) {
        double sum = 0.0;  // row i of sequence 0 sees keys 0..i (causal)
        for (std::size_t j = 0; j <= i; ++j) {
            double dot = 0.0;
            for (std::size_t d = 0; d < 8; ++d) dot += double(c.q(0, 0, i, d)) * double(c.k(0, 0, j, d));
            sum += std::exp(dot * scale);
        }
        CHECK(std::abs(double(lse[i]) - std::log(sum)) <= 1e-5 * (1.0 + std::abs(std::log(sum))));
        CHECK(lse[30 + i] == -INFINITY);
    }
    // The output is version 3's, bit for bit: the log-sum-exp is an extra output, not another forward.
    Tensor4 tiled = Tensor4::from_shape(c.q.shape());
    kernels::emulate(kernels::Version::tiled, c.p, {c.q.data(), c.k.data(), c.v.data(), c.key_len.data()},
                     tiled.data());
    CHECK(std::equal(out.begin(), out.end(), tiled.begin()));
}

TEST_CASE("backward kernels: race-free, whatever order the emulator runs threads in", "[kernels][backward]") {
    // Every barrier in place: the fiber schedules in both orders and real threads agree bit for bit.
    const Case c = make_case(1, 2, 70, 16, true, 11);
    for (BackwardVersion v : kernels::backward_versions) {
        INFO(describe(v, c));
        const Grads forward = run(v, c, Schedule::fibers);
        for (Schedule s : {Schedule::fibers_reversed, Schedule::threads}) {
            const Grads other = run(v, c, s);
            CHECK(std::equal(forward.dq.begin(), forward.dq.end(), other.dq.begin()));
            CHECK(std::equal(forward.dk.begin(), forward.dk.end(), other.dk.begin()));
            CHECK(std::equal(forward.dv.begin(), forward.dv.end(), other.dv.begin()));
        }
    }
}

TEST_CASE("backward kernels: the counted traffic is what their loops read and write", "[kernels][backward]") {
    // Expected counts derived from the loops by hand (element accesses, one head, D = 16), with
    // e(i) the keys row i sees and r(j) the rows that see key j:
    //   forward   version 3's, plus 1 store of lse per row; naive's P per row: loads 1 (key_len)
    //             + 1 (lse, when e > 0) + 2D e, stores N
    //   naive     rows, per row: loads 1 + 4D e + 3e, stores 2e + D; columns, per key: loads
    //             1 + 4D r, stores 2D
    //   flash     D = rowsum(dO o O): loads 2D, stores 1 per row; key tiles of Bc = 32, per block:
    //             32 loads of key_len, and when the tile has a real key: 2D per real key row, per
    //             query tile walked 2D + 2 per row, D atomics (a load and a store each) per row that
    //             sees a key of the tile; 2D stores per key row below N
    const bool causal = GENERATE(false, true);
    Case c = make_case(2, 1, 70, 16, causal, 13);
    c.key_len = {70, 37};
    const std::uint64_t D = 16, N = 70, Bc = 32;
    auto end_of = [&](std::uint64_t i, int b) {
        const std::uint64_t len = std::uint64_t(c.key_len[std::size_t(b)]);
        return causal ? std::min(i + 1, len) : len;
    };
    std::uint64_t weights_loads = 0, naive_loads = 0, naive_stores = 0, flash_loads = 0, flash_stores = 0;
    for (int b = 0; b < 2; ++b) {
        const std::uint64_t len = std::uint64_t(c.key_len[std::size_t(b)]);
        for (std::uint64_t i = 0; i < N; ++i) {
            const std::uint64_t e = end_of(i, b);
            weights_loads += 1 + (e > 0 ? 1 : 0) + 2 * D * e;
            naive_loads += 1 + 4 * D * e + 3 * e;
            naive_stores += 2 * e + D;
            const std::uint64_t r = i < len ? (causal ? N - i : N) : 0;  // key i's rows
            naive_loads += 1 + 4 * D * r;
            naive_stores += 2 * D;
            flash_loads += 2 * D, flash_stores += 1 + 2 * D;
        }
        for (std::uint64_t k0 = 0; k0 < N; k0 += Bc) {
            flash_loads += Bc;
            if (k0 >= len) continue;
            flash_loads += 2 * D * std::min(Bc, len - k0);
            for (std::uint64_t q0 = causal ? k0 : 0; q0 < N; q0 += Bc) {
                for (std::uint64_t i = q0; i < std::min(q0 + Bc, N); ++i) {
                    flash_loads += 2 * D + 2;
                    if (end_of(i, b) > k0) flash_loads += D, flash_stores += D;
                }
            }
        }
    }
    kernels::BackwardStats naive, flash;
    run(BackwardVersion::naive, c, emulator::default_schedule(), &naive);
    run(BackwardVersion::flash, c, emulator::default_schedule(), &flash);
    Tensor4 out = Tensor4::from_shape(c.q.shape());
    const emulator::LaunchStats tiled = kernels::emulate(
        kernels::Version::tiled, c.p, {c.q.data(), c.k.data(), c.v.data(), c.key_len.data()}, out.data());
    CHECK(flash.forward.traffic.loads == tiled.traffic.loads);
    CHECK(flash.forward.traffic.stores == tiled.traffic.stores + 2 * N);
    CHECK(naive.forward.traffic.loads == tiled.traffic.loads + weights_loads);
    CHECK(naive.forward.traffic.stores == tiled.traffic.stores + 2 * N + 2 * N * N);
    CHECK(naive.backward.traffic.loads == naive_loads);
    CHECK(naive.backward.traffic.stores == naive_stores);
    CHECK(flash.backward.traffic.loads == flash_loads);
    CHECK(flash.backward.traffic.stores == flash_stores);
    CHECK(flash.backward.traffic.load_bytes == 4 * flash_loads);  // floats and ints, 4 bytes each
}

TEST_CASE("backward kernels: lesson 10's traffic table has both versions, the naive one reading N^2 more",
          "[kernels][backward]") {
    Problem p;
    p.batch = 1, p.heads = 2, p.seq = 64, p.d_head = 16;
    const std::vector<kernels::BackwardTraffic> rows = kernels::backward_traffic(p);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].version == BackwardVersion::naive);
    CHECK(rows[1].version == BackwardVersion::flash);
    // P written by the naive forward: B*H*N^2 floats beyond the flash forward's writes.
    CHECK(rows[0].forward.store_bytes - rows[1].forward.store_bytes == 4u * 2 * 64 * 64);
    CHECK(rows[0].backward.load_bytes > rows[1].backward.load_bytes);
}
