// Grader for exercise 06: the online-softmax and tiled attention kernels, run on the CPU emulator
// exactly as lesson 06 launches its own, and the warp reductions of version 4.
//
// Oracles: hand-worked rows and the library's double-precision attention_reference
// (tests/attention_test.cpp); hand-computed sums and maxima for the reductions. Tolerance:
// grade::Tolerance (1e-4 + 1e-4 |expected|). A race-free kernel must also give bit-identical
// answers whichever order the emulator runs its threads in.
// Milestones: part 1 = the online kernel, part 2 = the tiled one, part 3 (optional) = the warp
// reductions; each TEST_CASE carries its part's tag, and the grade report counts parts done.
#include "06_cuda_kernel.hpp"
#include "grade.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/base/random.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <string_view>

using namespace headwise;
using emulator::Schedule;
using grade::Ex06;

namespace {

constexpr std::string_view bhnd = "B, H, N, d_head";

// The grader says nothing of bank conflicts, so the emulator does not count them (a quarter of
// each launch's time); races are still checked.
[[maybe_unused]] const bool bank_model_off = (emulator::set_bank_model(false), true);

enum class Kernel { online, tiled };

Tensor4 run(const Ex06& ex, Kernel kernel, const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal,
            Schedule schedule = Schedule::fibers) {
    return kernel == Kernel::online ? ex.online(q, k, v, causal, schedule) : ex.tiled(q, k, v, causal, schedule);
}

std::string call_text(Kernel kernel, const Tensor4& q, bool causal, const std::string& extra = "") {
    return fmt::format("{}_attention(q, k, v {}{}){}", kernel == Kernel::online ? "online" : "tiled",
                       grade::shape_of(q), causal ? ", causal" : "", extra);
}

// After a failed check: is the subject's result attention with the scores scaled some other way
// than by 1/sqrt(d_head), or with every score the same (uniform weights)? Then say so, on the
// check's message.
void explain_scale(Kernel kernel, const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal) {
    Tensor4 mine;
    try {
        mine = run(grade::subject<Ex06>(), kernel, q, k, v, causal);
    } catch (const std::exception&) {
        return;  // the failure already says what it threw
    }
    const double d = double(q.shape()[3]);
    const std::pair<double, const char*> others[] = {{0.0, nullptr},
                                                     {1.0 / d, "1/d_head"},
                                                     {1.0, "1 (not scaled)"},
                                                     {std::sqrt(d), "sqrt(d_head)"},
                                                     {2.0 / std::sqrt(d), "2/sqrt(d_head)"}};
    for (const auto& [scale, name] : others) {
        AttentionOptions o;
        o.causal = causal;
        o.scale = float(scale);
        if (!grade::compare(mine, attention_reference(q, k, v, o), bhnd, grade::Tolerance{}).same) continue;
        const std::string why =
            name == nullptr
                ? std::string(
                      "; every output row is the plain average of the value rows its query sees: all its "
                      "scores came out equal (a score never computed, or an accumulator that did not start at "
                      "0 and swamped it?)")
                : fmt::format(
                      "; it is attention with the scores scaled by {} = {:.4g} instead of 1/sqrt(d_head) = {:.4g}",
                      name, scale, 1.0 / std::sqrt(d));
        grade::case_failures().back().message += why;
        grade::run_failures().back().message += why;
        return;
    }
}

// Random q, k, v of the given sizes against attention_reference.
// `batch_heads`: B and H (the grid's z and y).
void expect_reference(Kernel kernel, const std::vector<int>& seqs, const std::vector<int>& d_heads, bool causal,
                      float spread = 1.0f, std::array<std::size_t, 2> batch_heads = {2, 2}) {
    for (int n : seqs)
        for (int d : d_heads) {
            Random rng(std::uint64_t(100 * n + d));
            const std::array<std::size_t, 4> shape{batch_heads[0], batch_heads[1], std::size_t(n), std::size_t(d)};
            const Tensor4 q = rng.normal<4>(shape, spread), k = rng.normal<4>(shape, spread), v = rng.normal<4>(shape);
            AttentionOptions o;
            o.causal = causal;
            if (!grade::expect<Ex06>(
                    {.what = call_text(kernel, q, causal), .dims = bhnd, .exp_of_finite_inputs = true},
                    [&](const Ex06& ex) { return run(ex, kernel, q, k, v, causal); }, attention_reference(q, k, v, o)))
                explain_scale(kernel, q, k, v, causal);
        }
}

// Two keys and two queries, d_head = 8. Query 0 scores ln 3 against key 0 and 0 against key 1
// (softmax 3/4, 1/4); query 1 scores 0 against both (1/2, 1/2). v_0 is all 1s, v_1 all 5s.
void expect_hand_worked(Kernel kernel) {
    Tensor4 q = Tensor4::from_shape({1, 1, 2, 8}), k = Tensor4::from_shape({1, 1, 2, 8}),
            v = Tensor4::from_shape({1, 1, 2, 8});
    q.fill(0.0f), k.fill(0.0f);
    q(0, 0, 0, 0) = std::sqrt(8.0f) * std::log(3.0f);  // times the scale 1/sqrt(8): ln 3
    k(0, 0, 0, 0) = 1.0f, k(0, 0, 1, 1) = 1.0f;
    for (std::size_t c = 0; c < 8; ++c) v(0, 0, 0, c) = 1.0f, v(0, 0, 1, c) = 5.0f;
    Tensor4 full = Tensor4::from_shape({1, 1, 2, 8}), causal = Tensor4::from_shape({1, 1, 2, 8});
    for (std::size_t c = 0; c < 8; ++c) {
        full(0, 0, 0, c) = 0.75f * 1 + 0.25f * 5, full(0, 0, 1, c) = 0.5f * 1 + 0.5f * 5;
        causal(0, 0, 0, c) = 1.0f, causal(0, 0, 1, c) = 0.5f * 1 + 0.5f * 5;  // query 0 sees key 0 only
    }
    grade::expect<Ex06>(
        {.what = call_text(kernel, q, false, " worked by hand"), .dims = bhnd, .exp_of_finite_inputs = true},
        [&](const Ex06& ex) { return run(ex, kernel, q, k, v, false); }, full);
    grade::expect<Ex06>(
        {.what = call_text(kernel, q, true, " worked by hand"), .dims = bhnd, .exp_of_finite_inputs = true},
        [&](const Ex06& ex) { return run(ex, kernel, q, k, v, true); }, causal);
}

}  // namespace

TEST_CASE("online: two queries and two keys worked by hand, causal and not", "[ex06][part1]") {
    expect_hand_worked(Kernel::online);
}

TEST_CASE("online: matches the reference for N = 1, 17, 100 and d_head = 8, 64", "[ex06][part1]") {
    expect_reference(Kernel::online, {1, 17, 100}, {8, 64}, false);
}

TEST_CASE("online: a maximum that grows at every key is rescaled", "[ex06][part1]") {
    // Key j scores 0.5 j: every key raises the running maximum, so what was summed before has to
    // be rescaled every time -- the accumulator as much as the normaliser.
    Tensor4 q = Tensor4::from_shape({1, 1, 20, 8}), k = Tensor4::from_shape({1, 1, 20, 8});
    q.fill(0.0f), k.fill(0.0f);
    for (std::size_t i = 0; i < 20; ++i) q(0, 0, i, 0) = 0.5f * std::sqrt(8.0f), k(0, 0, i, 0) = float(i);
    const Tensor4 v = Random(7).normal<4>({1, 1, 20, 8});
    grade::expect<Ex06>(
        {.what = call_text(Kernel::online, q, false, " with growing scores"),
         .dims = bhnd,
         .exp_of_finite_inputs = true},
        [&](const Ex06& ex) { return ex.online(q, k, v, false, Schedule::fibers); }, attention_reference(q, k, v));
}

TEST_CASE("online: causal, query i sees keys 0..i", "[ex06][part1]") {
    expect_reference(Kernel::online, {1, 17, 100}, {8, 64}, true);
}

TEST_CASE("online: scores in the hundreds stay finite", "[ex06][part1]") {
    // q and k entries of size ~10 make scores of a few hundred: exp() of that overflows a float.
    expect_reference(Kernel::online, {50}, {8}, false, 10.0f);
}

TEST_CASE("online: B = 3 batches of H = 2 heads (the grid's z and y differ), causal and not", "[ex06][part1]") {
    expect_reference(Kernel::online, {17}, {8}, false, 1.0f, {3, 2});
    expect_reference(Kernel::online, {17}, {8}, true, 1.0f, {3, 2});
}

// Every score is large and negative (a few hundred below 0: every entry of q negative, every
// one of k positive, each of size ~20): exp() of each underflows to 0 unless the running maximum
// is subtracted first, and the row would be 0/0.
void expect_large_negative(Kernel kernel) {
    Random rng(5);
    Tensor4 q = rng.normal<4>({3, 2, 17, 8}, 20.0f), k = rng.normal<4>({3, 2, 17, 8}, 20.0f);
    const Tensor4 v = rng.normal<4>({3, 2, 17, 8});
    for (float& x : q) x = -std::abs(x) - 1.0f;
    for (float& x : k) x = std::abs(x) + 1.0f;
    AttentionOptions causal;
    causal.causal = true;
    grade::expect<Ex06>(
        {.what = call_text(kernel, q, true, " with every visible score large and negative"),
         .dims = bhnd,
         .exp_of_finite_inputs = true},
        [&](const Ex06& ex) { return run(ex, kernel, q, k, v, true); }, attention_reference(q, k, v, causal));
}

TEST_CASE("online: rows whose visible scores are all large and negative", "[ex06][part1]") {
    expect_large_negative(Kernel::online);
}

TEST_CASE("tiled: two queries and two keys worked by hand, causal and not", "[ex06][part2]") {
    expect_hand_worked(Kernel::tiled);
}

TEST_CASE("tiled: matches the reference for N = 1, 17, 64, 100, 130 (partial last tiles)", "[ex06][part2]") {
    expect_reference(Kernel::tiled, {1, 17, 64, 100, 130}, {8, 64}, false);
}

TEST_CASE("tiled: d_head = 128, whose key tiles (32) are shorter than a block's rows (64)", "[ex06][part2]") {
    expect_reference(Kernel::tiled, {100}, {128}, false);
    expect_reference(Kernel::tiled, {100}, {128}, true);
}

TEST_CASE("tiled: causal, query i sees keys 0..i across tiles", "[ex06][part2]") {
    expect_reference(Kernel::tiled, {17, 64, 100, 130}, {8, 64}, true);
}

TEST_CASE("tiled: B = 3 batches of H = 2 heads (the grid's z and y differ), causal and not", "[ex06][part2]") {
    expect_reference(Kernel::tiled, {17}, {8}, false, 1.0f, {3, 2});
    expect_reference(Kernel::tiled, {17}, {8}, true, 1.0f, {3, 2});
}

TEST_CASE("tiled: rows whose visible scores are all large and negative", "[ex06][part2]") {
    expect_large_negative(Kernel::tiled);
}

TEST_CASE("tiled: the answer does not depend on the order the threads run in", "[ex06][part2]") {
    // The emulator runs a block's threads one after another, each until its next __syncthreads().
    // Forwards or backwards, a kernel whose threads wait for each other computes the same bits;
    // one that reads a tile before every thread has written it (or overwrites it while others
    // still read it) does not.
    Random rng(11);
    const Tensor4 q = rng.normal<4>({1, 2, 100, 16}), k = rng.normal<4>({1, 2, 100, 16}),
                  v = rng.normal<4>({1, 2, 100, 16});
    const std::string what = call_text(Kernel::tiled, q, false, " run forwards, then backwards");
    const auto both_orders = [&](const Ex06& ex) {
        return std::pair{ex.tiled(q, k, v, false, Schedule::fibers),
                         ex.tiled(q, k, v, false, Schedule::fibers_reversed)};
    };
    grade::announce(what);
    std::pair<Tensor4, Tensor4> mine;
    try {
        mine = both_orders(grade::subject<Ex06>());
    } catch (const std::exception& e) {
        if (std::string_view(e.what()).starts_with("not implemented yet")) throw;
        // A race on a shared tile (the emulator names both lines), or another launch error: a
        // catalogued mistake is named only if it stops the same way (lines aside).
        grade::Diagnosis d = grade::describe_exception(what, e);
        d.large = true;
        d.matching = grade::diagnose_throw<Ex06>(both_orders, e);
        grade::fail_check(std::move(d));
        return;
    }
    const grade::Outcome o = grade::compare(mine.second, mine.first, bhnd, grade::Tolerance{0.0, 0.0});
    const grade::Tolerance exact{0.0, 0.0};
    if (o.same) {
        // Reproduction before naming: a catalogued kernel that gives other bits here is not the subject.
        grade::rule_out_by_passing_check<Ex06>(what, [&](const Ex06& ex) {
            const auto theirs = both_orders(ex);
            return grade::agree(mine.first, theirs.first, bhnd, exact) &&
                   grade::agree(mine.second, theirs.second, bhnd, exact);
        });
        SUCCEED("same result with the threads run forwards and backwards");
        return;
    }
    grade::Diagnosis d;
    d.message = what + ": the results differ: " + o.detail;
    d.details = o.details;
    d.large = true;
    // Named: a catalogued mistake that also depends on the order, and gives the same bits both ways.
    const grade::GraderWork timed;
    for (const grade::Mistake<Ex06>& m : grade::catalogue<Ex06>()) {
        grade::remember_explanation(m.name, m.explanation);
        if (!grade::still_possible(m.name)) continue;
        try {
            const auto theirs = both_orders(m.api);
            if (!grade::agree(theirs.second, theirs.first, bhnd, exact) &&
                grade::agree(mine.first, theirs.first, bhnd, exact) &&
                grade::agree(mine.second, theirs.second, bhnd, exact))
                d.matching.push_back(m.name);
        } catch (const std::exception&) {}
    }
    grade::fail_check(std::move(d));
}

// ---------------------------------------------------------------------------------------------
// Part 3 (optional): warp_sum and warp_max, one block of two warps. Expected values by hand.

namespace {

constexpr std::string_view warps_lanes = "warp, lane";

Tensor2 two_warps(float (*value)(int t)) {
    Tensor2 x = Tensor2::from_shape({2, 32});  // (warp, lane): thread t = 32 warp + lane
    for (std::size_t t = 0; t < 64; ++t) x(t / 32, t % 32) = value(int(t));
    return x;
}

Tensor2 every_lane(float warp0, float warp1) {
    Tensor2 r = Tensor2::from_shape({2, 32});  // (warp, lane)
    for (std::size_t l = 0; l < 32; ++l) r(0, l) = warp0, r(1, l) = warp1;
    return r;
}

void expect_reduction(const Tensor2& x, bool maximum, const Tensor2& expected, const std::string& what) {
    for (Schedule s : {Schedule::fibers, Schedule::fibers_reversed}) {
        grade::expect<Ex06>(
            {.what = fmt::format("{}({}) in every lane, lanes run {}", maximum ? "warp_max" : "warp_sum", what,
                                 s == Schedule::fibers ? "forwards" : "backwards"),
             .dims = warps_lanes},
            [&](const Ex06& ex) { return ex.warp_reduce(x, maximum, s); }, expected);
    }
}

}  // namespace

TEST_CASE("warp_sum: 0 + 1 + ... + 31 = 496 and 32 + ... + 63 = 1520, in every lane", "[ex06][part3][optional]") {
    expect_reduction(two_warps([](int t) { return float(t); }), false, every_lane(496.0f, 1520.0f), "thread index");
}

TEST_CASE("warp_sum: one non-zero lane reaches every other lane", "[ex06][part3][optional]") {
    // Only lane 31 of warp 0 and lane 0 of warp 1 hold 1: a missing step leaves some lanes at 0.
    expect_reduction(two_warps([](int t) { return t == 31 || t == 32 ? 1.0f : 0.0f; }), false, every_lane(1.0f, 1.0f),
                     "a single 1");
}

TEST_CASE("warp_max: the largest lane, negatives and -infinity included", "[ex06][part3][optional]") {
    // Warp 0: -t except lane 6, which holds 7.5. Warp 1: -t (the largest is lane 0's -32), lane 9 -inf.
    const Tensor2 x = two_warps([](int t) { return t == 6 ? 7.5f : (t == 41 ? -INFINITY : -float(t)); });
    expect_reduction(x, true, every_lane(7.5f, -32.0f), "negatives, one -inf");
}
