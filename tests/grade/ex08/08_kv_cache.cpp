// Grader for exercise 08: one decode step with a grouped-query KV cache.
//
// Oracles: a two-token case worked out by hand; the full causal recompute of the whole sequence
// in double precision (attention_reference on K/V repeated per group); the library's own KV cache
// and grouped-query attention (src/headwise/inference/kv_cache.hpp, tests/kv_cache_test.cpp). The
// projections are the library's, handed to decode_step as a callback that counts the token rows
// it projects. Every run starts from an empty cache and returns the outputs of all its steps.
#include "08_kv_cache.hpp"
#include "grade.hpp"
#include "search.hpp"

#include "headwise/inference/kv_cache.hpp"
#include "headwise/base/random.hpp"

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <stdexcept>

using namespace headwise;
using grade::Ex08;

namespace {

struct Problem {
    std::size_t batch, heads, kv_heads, d_head, steps;
    std::uint64_t seed;
    std::string label() const {
        return fmt::format("B = {}, H = {}, H_kv = {}, d_head = {}, {} steps from an empty cache", batch, heads,
                           kv_heads, d_head, steps);
    }
};

// A problem's module and tokens (B, steps, d_model).
struct Setup {
    GroupedQueryAttention m;
    Tensor3 x;
    explicit Setup(const Problem& p) {
        Random rng(p.seed);
        m = GroupedQueryAttention::random(p.heads * p.d_head, p.heads, p.kv_heads, /*bias=*/true, rng);
        m.in_proj_weight *= std::sqrt(3.0f);  // q, k entries of order 1: weights with some structure
        x = rng.normal<3>({p.batch, p.steps, p.heads * p.d_head});
    }
};

// A projection handed no token at all refuses it (instead of reading an empty block).
void require_a_token(const Tensor3& x) {
    if (x.shape()[1] == 0) {
        throw std::invalid_argument(fmt::format(
            "project() was handed x of shape {}: no token at all (an empty view: a range past the last token?)",
            grade::shape_of(x)));
    }
}

// The grader's projections: the library's, counting every token row they project into `rows`.
decoding::Project counting_projection(const GroupedQueryAttention& m, const std::shared_ptr<std::size_t>& rows) {
    return [&m, rows](const Tensor3& x) {
        require_a_token(x);
        *rows += x.shape()[0] * x.shape()[1];
        return decoding::Projection{m.project_q(x), m.project_k(x), m.project_v(x)};
    };
}

// An empty cache as a server hands one over: length 0, its slots still holding what an earlier
// sequence left there. Nothing in them is 0 to rely on: a `+=` into the cache, or a read past
// `length`, changes the result.
decoding::Cache empty_cache(std::size_t batch, std::size_t kv_heads, std::size_t capacity, std::size_t d_head) {
    Random rng(2024);
    const std::array<std::size_t, 4> shape{batch, kv_heads, capacity, d_head};
    Tensor4 k = rng.normal<4>(shape), v = rng.normal<4>(shape);
    return {std::move(k), std::move(v), 0};
}

// What a run of decode_step leaves behind.
struct Run {
    Tensor4 out;  // (B, H, steps, d_head): step t's output in column t
    decoding::Cache cache;
    std::size_t rows = 0;  // token rows projected
};

// Every step's output side by side along axis 2, whatever its shape: (B, H, steps, d_head) when
// each is (B, H, 1, d_head), so a wrong shape is reported as the outputs of every step truly
// stack. Steps of different shapes do not stack: the first whose shape is not the first's is
// returned alone.
Tensor4 stack_steps(const std::vector<Tensor4>& outputs) {
    if (outputs.empty()) return {};
    const auto shape = outputs.front().shape();
    for (const Tensor4& y : outputs)
        if (y.shape() != shape) return y;
    const std::size_t rows = shape[2];
    Tensor4 out = Tensor4::from_shape({shape[0], shape[1], rows * outputs.size(), shape[3]});
    for (std::size_t t = 0; t < outputs.size(); ++t)
        xt::view(out, xt::all(), xt::all(), xt::range(t * rows, (t + 1) * rows), xt::all()) = outputs[t];
    return out;
}

// Calls decode_step once per token, tokens 0 .. t handed over at step t; the run's output is
// every step's, stacked (stack_steps), and the cache's length and contents are what all of them
// made.
Run run_steps(const Ex08& ex, const GroupedQueryAttention& m, const Tensor3& x, std::size_t capacity,
              const decoding::Project* custom = nullptr) {
    const std::size_t batch = x.shape()[0], steps = x.shape()[1], d_head = m.d_head();
    Run r{Tensor4{}, empty_cache(batch, m.kv_heads, capacity, d_head)};
    auto rows = std::make_shared<std::size_t>(0);
    const decoding::Project project = custom ? *custom : counting_projection(m, rows);
    std::vector<Tensor4> outputs;
    for (std::size_t t = 0; t < steps; ++t) {
        const Tensor3 tokens = xt::view(x, xt::all(), xt::range(0, t + 1), xt::all());  // (B, t + 1, d_model)
        outputs.push_back(ex.decode_step(r.cache, tokens, project));                    // (B, H, 1, d_head)
    }
    r.out = stack_steps(outputs);
    r.rows = *rows;
    return r;
}

// The full causal recompute: every token's q, k, v at once, K/V repeated per group, the causal
// mask, double precision. Row t is what decode step t must give.
Tensor4 full_recompute(const GroupedQueryAttention& m, const Tensor3& x) {
    AttentionOptions causal;
    causal.causal = true;
    return attention_reference(m.project_q(x), repeat_kv(m.project_k(x), m.group()),
                               repeat_kv(m.project_v(x), m.group()), causal);
}

// The library's KV cache, step by step: append, then grouped-query attention over the cache.
Tensor4 library_decode(const GroupedQueryAttention& m, const Tensor3& x) {
    const std::size_t batch = x.shape()[0], steps = x.shape()[1];
    KVCache cache(batch, m.kv_heads, m.d_head(), steps);
    Tensor4 out = Tensor4::from_shape({batch, m.heads, steps, m.d_head()});
    for (std::size_t t = 0; t < steps; ++t) {
        const Tensor3 x_t = xt::view(x, xt::all(), xt::range(t, t + 1), xt::all());  // (B, 1, d_model)
        cache.append(m.project_k(x_t), m.project_v(x_t));
        xt::view(out, xt::all(), xt::all(), xt::range(t, t + 1), xt::all()) =
            grouped_query_attention(m.project_q(x_t), cache.keys(), cache.values());
    }
    return out;
}

enum class Oracle { recompute, library };

// State first: the cache's length after `steps` steps from an empty cache. A wrong length is
// the decisive fact (every position and every output after it follows from it), so it is
// checked, and reported, before what the cache holds.
template <class RunOf>
void expect_length(const std::string& label, const RunOf& run_of, std::size_t steps) {
    grade::expect<Ex08>(
        {.what = "cache.length after " + label,
         .dims = "tokens cached",
         .explain =
             [&](std::size_t got) {
                 if (got == 0)
                     return fmt::format("the cache length is still 0 after {} steps: it is never counted up", steps);
                 if (got < steps)
                     return fmt::format("the cache length is {} after {} steps: some steps did not count", got, steps);
                 return fmt::format("the cache length is {} after {} steps: more than one token counted per step", got,
                                    steps);
             }},
        [&](const Ex08& ex) { return run_of(ex).cache.length; }, steps);
}

// In the lesson's order (step 1, then step 6): what the run left in the cache, then the outputs
// of every step. One run per implementation serves both checks; a cache that matched says the
// outputs' difference arises in the attention over it. `scale` multiplies the projection weights
// (large scores).
void expect_decode(const Problem& p, Oracle oracle, float scale = 1.0f) {
    Setup s(p);
    s.m.in_proj_weight *= scale;
    std::map<std::pair<decltype(Ex08::decode_step), int>, Run> runs;
    const auto run = [&](const Ex08& ex) -> const Run& {
        const auto it = runs.find({ex.decode_step, grade::search::selected_variant()});
        if (it != runs.end()) return it->second;
        return runs
            .emplace(std::pair{ex.decode_step, grade::search::selected_variant()}, run_steps(ex, s.m, s.x, p.steps))
            .first->second;
    };
    const std::string label = p.label() + (scale != 1.0f ? fmt::format(", projections x{}", scale) : "");
    expect_length(label, run, p.steps);
    const bool k_ok = grade::expect<Ex08>(
        {.what = "cache.k after " + label, .dims = "B, H_kv, position, d_head"},
        [&](const Ex08& ex) { return run(ex).cache.k; }, s.m.project_k(s.x));
    const bool v_ok = grade::expect<Ex08>(
        {.what = "cache.v after " + label, .dims = "B, H_kv, position, d_head"},
        [&](const Ex08& ex) { return run(ex).cache.v; }, s.m.project_v(s.x));
    const Tensor4 expected = oracle == Oracle::recompute ? full_recompute(s.m, s.x) : library_decode(s.m, s.x);
    grade::expect<Ex08>(
        {.what = fmt::format("decode_step, {} (outputs of every step, vs {})", label,
                             oracle == Oracle::recompute ? "the full causal recompute" : "the library's KV cache"),
         .dims = "B, H, step, d_head",
         .after = k_ok && v_ok ? "the cache (every token's k and v at its own position)" : "",
         .exp_of_finite_inputs = true},
        [&](const Ex08& ex) { return run(ex).out; }, expected);
}

}  // namespace

TEST_CASE("decode_step: two tokens worked by hand, one K/V head shared by two query heads", "[ex08]") {
    // d_head = 2, so scores are q . k / sqrt(2). Token 0: whatever its query, its only key is its
    // own, weight 1: both heads output v0 = (3, -1). Token 1: head 0 has q = (sqrt(2) ln 3, 0),
    // k0 = (0, 5), k1 = (1, 0): scores 0 and ln 3, weights 1/4 and 3/4, output
    // 1/4 (3, -1) + 3/4 (-1, 7) = (0, 5); head 1 has q = 0: weights 1/2, 1/2, output (1, 3).
    const float a = std::sqrt(2.0f) * std::log(3.0f);
    const Tensor4 q0 = {{{{1.0f, 2.0f}}, {{-1.0f, 0.5f}}}}, q1 = {{{{a, 0.0f}}, {{0.0f, 0.0f}}}};  // (1, 2, 1, 2)
    const Tensor4 k0 = {{{{0.0f, 5.0f}}}}, k1 = {{{{1.0f, 0.0f}}}};                                // (1, 1, 1, 2)
    const Tensor4 v0 = {{{{3.0f, -1.0f}}}}, v1 = {{{{-1.0f, 7.0f}}}};
    // The projections of tokens 0 and 1, by position (token n's x is filled with n).
    const decoding::Project by_hand = [&](const Tensor3& x) {
        require_a_token(x);
        decoding::Projection p{q0, k0, v0};
        for (std::size_t i = 1; i < x.shape()[1]; ++i) {  // a second token in the block: stack along N
            const bool second = x(0, i, 0) == 1.0f;
            p.q = xt::concatenate(xt::xtuple(p.q, second ? q1 : q0), 2);
            p.k = xt::concatenate(xt::xtuple(p.k, second ? k1 : k0), 2);
            p.v = xt::concatenate(xt::xtuple(p.v, second ? v1 : v0), 2);
        }
        if (x(0, 0, 0) == 1.0f) p = {q1, k1, v1};  // a block of token 1 alone
        return p;
    };
    Tensor3 x = Tensor3::from_shape({1, 2, 4});  // (B, N, d_model)
    for (std::size_t n = 0; n < 2; ++n) xt::view(x, 0, n) = float(n);
    GroupedQueryAttention shape_only;  // H = 2, H_kv = 1, d_head = 2: the sizes run_steps needs
    shape_only.heads = 2;
    shape_only.kv_heads = 1;
    shape_only.out_proj_weight = Tensor2::from_shape({4, 4});
    const Tensor4 expected = {{{{3.0f, -1.0f}, {0.0f, 5.0f}}, {{3.0f, -1.0f}, {1.0f, 3.0f}}}};  // (1, 2, 2, 2)
    expect_length(
        "decode_step on tokens 0 and 1 (B = 1, H = 2, H_kv = 1, d_head = 2)",
        [&](const Ex08& ex) { return run_steps(ex, shape_only, x, 4, &by_hand); }, 2);
    grade::expect<Ex08>(
        {.what = "decode_step on tokens 0 and 1 (B = 1, H = 2, H_kv = 1, d_head = 2), outputs of both steps",
         .dims = "B, H, step, d_head",
         .exp_of_finite_inputs = true},
        [&](const Ex08& ex) { return run_steps(ex, shape_only, x, 4, &by_hand).out; }, expected);
}

TEST_CASE("decode_step: multi-head (H_kv = H) equals the full causal recompute, B > 1", "[ex08]") {
    expect_decode({2, 4, 4, 8, 12, 1}, Oracle::recompute);
}

TEST_CASE("decode_step: grouped-query (H_kv = 2) equals the full causal recompute", "[ex08]") {
    expect_decode({3, 4, 2, 8, 10, 2}, Oracle::recompute);
    expect_decode({2, 6, 2, 4, 9, 3}, Oracle::recompute);
}

TEST_CASE("decode_step: multi-query (H_kv = 1) equals the full causal recompute", "[ex08]") {
    expect_decode({2, 4, 1, 8, 10, 4}, Oracle::recompute);
}

TEST_CASE("decode_step: large scores (projections x12) stay finite: the softmax subtracts each row's max", "[ex08]") {
    // Scores of several hundred: exp of one overflows a float, exp of its difference to the max
    // does not. The oracle is the recompute in double precision.
    expect_decode({2, 4, 2, 8, 8, 11}, Oracle::recompute, 12.0f);
}

TEST_CASE("decode_step: 40 steps match the library's KV cache, H = 8 with H_kv in {1, 2, 8}", "[ex08]") {
    expect_decode({2, 8, 2, 8, 40, 5}, Oracle::library);
    expect_decode({3, 8, 1, 4, 40, 6}, Oracle::library);
    expect_decode({2, 8, 8, 4, 40, 7}, Oracle::library);
}

TEST_CASE("decode_step: the cache holds every token's k and v at its own position", "[ex08]") {
    const Problem p{2, 4, 2, 4, 6, 8};
    const Setup s(p);
    const std::size_t capacity = 9;  // room to spare: positions 6..8 must stay untouched (as handed over)
    const decoding::Cache handed_over = empty_cache(p.batch, p.kv_heads, capacity, p.d_head);
    Tensor4 expected_k = handed_over.k, expected_v = handed_over.v;
    xt::view(expected_k, xt::all(), xt::all(), xt::range(0, p.steps), xt::all()) = s.m.project_k(s.x);
    xt::view(expected_v, xt::all(), xt::all(), xt::range(0, p.steps), xt::all()) = s.m.project_v(s.x);
    grade::expect<Ex08>(
        {.what = "cache.k after " + p.label() + ", capacity 9", .dims = "B, H_kv, position, d_head"},
        [&](const Ex08& ex) { return run_steps(ex, s.m, s.x, capacity).cache.k; }, expected_k);
    grade::expect<Ex08>(
        {.what = "cache.v after " + p.label() + ", capacity 9", .dims = "B, H_kv, position, d_head"},
        [&](const Ex08& ex) { return run_steps(ex, s.m, s.x, capacity).cache.v; }, expected_v);
    grade::expect<Ex08>(
        {.what = "cache.length after " + p.label(), .dims = "tokens cached"},
        [&](const Ex08& ex) { return run_steps(ex, s.m, s.x, capacity).cache.length; }, p.steps);
}

TEST_CASE("decode_step: projects only the new token (O(1) projections per step, not O(N))", "[ex08]") {
    // 26 steps for B = 40: one token row per sequence per step is 1,040 rows (a count large enough
    // for the report to name a mistake on it: grade.hpp's is_large). Projecting every token again
    // at every step would be 40 * (1 + 2 + ... + 26) = 14,040. (Many sequences and few steps: the
    // attention over the cache grows with the steps, and a re-grade waits on this check.)
    const Problem p{40, 4, 2, 4, 26, 9};
    const Setup s(p);
    grade::expect<Ex08>(
        {.what = "token rows handed to project over " + p.label(), .dims = "token rows projected"},
        [&](const Ex08& ex) { return run_steps(ex, s.m, s.x, p.steps).rows; }, p.batch * p.steps);
}

TEST_CASE("decode_step: a full cache is refused with usage_error", "[ex08]") {
    const Problem p{1, 2, 1, 4, 3, 10};
    const Setup s(p);
    grade::expect_usage_error<Ex08>(
        "decode_step on a cache of capacity 3, after 3 steps that each should have added a token", [&](const Ex08& ex) {
            Run r = run_steps(ex, s.m, s.x, p.steps);  // fills it
            auto rows = std::make_shared<std::size_t>(0);
            const Tensor3 more =
                xt::concatenate(xt::xtuple(s.x, xt::view(s.x, xt::all(), xt::range(0, 1), xt::all())), 1);
            return ex.decode_step(r.cache, more, counting_projection(s.m, rows));
        });
}
