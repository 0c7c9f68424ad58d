// Grader for exercise 11: cross-entropy with its gradient, and one AdamW step.
//
// Oracles: hand-worked cases (a row whose softmax is 1/4, 1/2, 1/4; AdamW's first step, which
// bias correction makes exactly lr against the gradient's sign), and the library's own
// implementations in headwise/train/ (loss.hpp: a flat-array cross-entropy; adamw.hpp: AdamW),
// which tests/train_model_test.cpp checks against PyTorch autograd and finite differences.
// Two milestones: [part1] cross-entropy and its gradient, [part2] AdamW.
#include "11_induction_heads.hpp"
#include "grade.hpp"

#include "headwise/base/random.hpp"
#include "headwise/train/adamw.hpp"
#include "headwise/train/loss.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

using namespace headwise;
using grade::Ex11;

namespace {

struct Case {
    std::size_t batch, n, vocab;
    float scale;  // of the logits
};
// Every axis its own size; a vocabulary of 2; one row per sequence; logits like 1e4.
const std::vector<Case> cases = {{2, 3, 5, 3.0f}, {3, 4, 7, 1.0f}, {1, 6, 2, 2.0f}, {4, 1, 9, 3.0f}, {2, 5, 6, 1e4f}};

Tensor3 random_logits(const Case& c, std::uint64_t seed) {
    Random rng(seed);
    return rng.normal<3>({c.batch, c.n, c.vocab}, c.scale);
}

// Random targets, -1 (not counted) at each sequence's last position as in training, and at about
// one other position in four: the sequences count different numbers of positions.
ex11::Targets random_targets(const Case& c, std::uint64_t seed) {
    Random rng(seed);
    ex11::Targets t = ex11::Targets::from_shape({c.batch, c.n});
    for (std::size_t b = 0; b < c.batch; ++b)
        for (std::size_t i = 0; i < c.n; ++i) {
            const bool skipped = (i + 1 == c.n && c.n > 1) || rng.next_u64() % 4 == 0;
            t(b, i) = skipped ? -1 : std::int32_t(rng.next_u64() % c.vocab);
        }
    return t;
}

// The library's answer: loss and d loss / d logits.
float oracle(const Tensor3& logits, const ex11::Targets& targets, Tensor3* dlogits) {
    const std::vector<std::int32_t> t(targets.begin(), targets.end());
    Tensor3 d = Tensor3::from_shape(logits.shape());
    const double loss =
        train::cross_entropy({logits.data(), logits.size()}, logits.shape()[2], t, {d.data(), d.size()});
    if (dlogits != nullptr) *dlogits = d;
    return float(loss);
}

std::string describe(const Tensor3& logits, const Case& c) {
    return fmt::format("logits {} (scale {:g}), targets ({}, {}) with -1 at the last position and a few others",
                       grade::shape_of(logits), double(c.scale), c.batch, c.n);
}

Tensor1 scalar(float v) { return Tensor1{v}; }

// The learner's d loss / d logits for these logits and targets.
Tensor3 dlogits_of(const Ex11& ex, const Tensor3& logits, const ex11::Targets& targets) {
    Tensor3 d;
    ex.cross_entropy(logits, targets, &d);
    return d;
}

// A small case worked by hand: the loss, then d loss / d logits (B, N, V).
void expect_by_hand(const std::string& label, const Tensor3& logits, const ex11::Targets& targets, float loss,
                    const Tensor3& dlogits, grade::Tolerance tol = {1e-6, 1e-6}) {
    grade::expect<Ex11>(
        {.what = label + ": loss", .dims = "loss", .tol = tol, .exp_of_finite_inputs = true},
        [&](const Ex11& ex) { return scalar(ex.cross_entropy(logits, targets, nullptr)); }, scalar(loss));
    grade::expect<Ex11>(
        {.what = label + ", dlogits", .dims = "B, N, V", .tol = tol, .exp_of_finite_inputs = true},
        [&](const Ex11& ex) { return dlogits_of(ex, logits, targets); }, dlogits);
}

}  // namespace

TEST_CASE("cross_entropy: a hand-worked row, softmax (1/4, 1/2, 1/4), and a row not counted", "[ex11][part1]") {
    const Tensor3 logits = {{{0.0f, std::log(2.0f), 0.0f}, {5.0f, 1.0f, 2.0f}}};  // (1, 2, 3)
    const Tensor3 expected = {{{0.25f, -0.5f, 0.25f}, {0.0f, 0.0f, 0.0f}}};       // one counted row: / 1
    expect_by_hand("cross_entropy(logits (1, 2, 3), targets {1, -1})", logits, {{1, -1}}, std::log(2.0f), expected);
}

TEST_CASE("cross_entropy: no position counted gives loss 0 and no gradient", "[ex11][part1]") {
    const Tensor3 logits = {{{1.0f, 2.0f, -1.0f}, {0.5f, 0.0f, 3.0f}}};  // (1, 2, 3)
    expect_by_hand("cross_entropy(logits (1, 2, 3), targets {-1, -1})", logits, {{-1, -1}}, 0.0f,
                   xt::zeros<float>({1, 2, 3}), {0.0, 0.0});
}

TEST_CASE("cross_entropy: rows whose largest logit, 1e4, comes last or first stay finite", "[ex11][part1]") {
    // Each row's maximum must be the whole row's: exp(1e4 - m) overflows for any m short of it.
    const Tensor3 logits = {{{-1e4f, 0.0f, 1e4f}, {1e4f, 0.0f, -1e4f}}};    // (1, 2, 3): loss 1e4 on each row
    const Tensor3 expected = {{{0.0f, -0.5f, 0.5f}, {0.5f, -0.5f, 0.0f}}};  // (softmax - one-hot) / 2
    expect_by_hand("cross_entropy(logits (1, 2, 3) with 1e4 last in row 0 and first in row 1, targets {1, 1})", logits,
                   {{1, 1}}, 1e4f, expected);
}

TEST_CASE("cross_entropy: the loss matches the library for many shapes, logits like 1e4 included", "[ex11][part1]") {
    for (const Case& c : cases) {
        const Tensor3 logits = random_logits(c, 3);
        const ex11::Targets targets = random_targets(c, 4);
        grade::expect<Ex11>(
            {.what = "cross_entropy(" + describe(logits, c) + "): loss",
             .dims = "loss",
             .tol = {1e-4, 1e-5},
             .exp_of_finite_inputs = true},
            [&](const Ex11& ex) { return scalar(ex.cross_entropy(logits, targets, nullptr)); },
            scalar(oracle(logits, targets, nullptr)));
    }
}

TEST_CASE("cross_entropy: dlogits = (softmax - one-hot) / count matches the library for many shapes", "[ex11][part1]") {
    for (const Case& c : cases) {
        const Tensor3 logits = random_logits(c, 5);
        const ex11::Targets targets = random_targets(c, 6);
        Tensor3 expected;
        oracle(logits, targets, &expected);
        grade::expect<Ex11>(
            {.what = "cross_entropy(" + describe(logits, c) + "): dlogits",
             .dims = "B, N, V",
             .tol = {1e-6, 1e-5},
             .exp_of_finite_inputs = true},
            [&](const Ex11& ex) { return dlogits_of(ex, logits, targets); }, expected);
    }
}

namespace {

struct Run {
    std::size_t params;
    ex11::AdamWOptions options;
    int steps;
};

// params after each step, then m and v after the last, side by side: (steps + 2, P).
Tensor2 adamw_run(const Run& r, const std::function<void(Tensor1&, const Tensor1&, int)>& step,
                  const std::function<std::pair<Tensor1, Tensor1>()>& moments) {
    Random rng(17);
    Tensor1 p = rng.normal<1>({r.params});
    Tensor2 out = Tensor2::from_shape({std::size_t(r.steps) + 2, r.params});
    for (int s = 0; s < r.steps; ++s) {
        const Tensor1 g = rng.normal<1>({r.params}, 0.1f * float(s + 1));
        step(p, g, s);
        for (std::size_t i = 0; i < r.params; ++i) out(std::size_t(s), i) = p(i);
    }
    const auto [m, v] = moments();
    for (std::size_t i = 0; i < r.params; ++i) {
        out(std::size_t(r.steps), i) = m.size() == r.params ? m(i) : NAN;
        out(std::size_t(r.steps) + 1, i) = v.size() == r.params ? v(i) : NAN;
    }
    return out;
}

Tensor2 subject_run(const Ex11& ex, const Run& r) {
    ex11::AdamWState state;
    return adamw_run(
        r, [&](Tensor1& p, const Tensor1& g, int) { ex.adamw_step(p, g, state, r.options); },
        [&] {
            return std::pair{state.m, state.v};
        });
}

Tensor2 oracle_run(const Run& r) {
    const train::AdamWOptions& o = r.options;
    train::AdamW opt(r.params, o);
    Tensor1 m = Tensor1::from_shape({r.params}), v = Tensor1::from_shape({r.params});
    // The library keeps its moments to itself: m and v are recomputed here from the gradients.
    m.fill(0.0f);
    v.fill(0.0f);
    return adamw_run(
        r,
        [&](Tensor1& p, const Tensor1& g, int) {
            opt.step({p.data(), p.size()}, {g.data(), g.size()});
            for (std::size_t i = 0; i < r.params; ++i) {
                m(i) = o.beta1 * m(i) + (1 - o.beta1) * g(i);
                v(i) = o.beta2 * v(i) + (1 - o.beta2) * g(i) * g(i);
            }
        },
        [&] {
            return std::pair{m, v};
        });
}

}  // namespace

TEST_CASE("adamw_step: the first step moves each parameter by lr against its gradient, after the decay",
          "[ex11][part2]") {
    Tensor1 start = {1.0f, -2.0f, 0.5f, 3.0f};
    const Tensor1 grads = {3.0f, -0.001f, 0.25f, -7.0f};
    ex11::AdamWOptions o;
    o.lr = 0.1f;
    o.weight_decay = 0.5f;
    // Bias correction makes m_hat = g and v_hat = g^2 at step 1: p * (1 - lr wd) - lr * sign(g).
    const Tensor1 expected = {1.0f * 0.95f - 0.1f, -2.0f * 0.95f + 0.1f, 0.5f * 0.95f - 0.1f, 3.0f * 0.95f + 0.1f};
    grade::expect<Ex11>(
        {.what = "adamw_step(params (4), grads (4), a fresh state, lr 0.1, weight_decay 0.5)",
         .dims = "P",
         .tol = {1e-5, 1e-5}},
        [&](const Ex11& ex) {
            Tensor1 p = start;
            ex11::AdamWState state;
            ex.adamw_step(p, grads, state, o);
            return p;
        },
        expected);
}

TEST_CASE("adamw_step: five steps match the library's AdamW, params then m and v", "[ex11][part2]") {
    const std::vector<Run> runs = {{9, {}, 5},
                                   {5, {0.05f, 0.8f, 0.99f, 1e-6f, 0.1f}, 5},
                                   {3, {0.01f, 0.9f, 0.999f, 1e-8f, 0.0f}, 5},
                                   {4, {0.1f, 0.9f, 0.999f, 0.5f, 0.01f}, 5}};  // an eps large enough to count
    for (const Run& r : runs) {
        grade::expect<Ex11>(
            {.what = fmt::format(
                 "adamw_step x {} on params ({}), lr {:g}, betas ({:g}, {:g}), eps {:g}, weight_decay {:g}: rows "
                 "= params after each step, then m, then v",
                 r.steps, r.params, double(r.options.lr), double(r.options.beta1), double(r.options.beta2),
                 double(r.options.eps), double(r.options.weight_decay)),
             .dims = "step, P",
             .tol = {1e-5, 1e-4}},
            [&](const Ex11& ex) { return subject_run(ex, r); }, oracle_run(r));
    }
}

TEST_CASE("adamw_step: the state counts the steps", "[ex11][part2]") {
    grade::expect<Ex11>(
        {.what = "adamw_step x 3 on params (6): state.step", .dims = "step", .tol = {0.0, 0.0}},
        [&](const Ex11& ex) {
            Tensor1 p = Tensor1::from_shape({6});
            p.fill(1.0f);
            Tensor1 g = p;
            ex11::AdamWState state;
            for (int s = 0; s < 3; ++s) ex.adamw_step(p, g, state, {});
            return scalar(float(state.step));
        },
        scalar(3.0f));
}
