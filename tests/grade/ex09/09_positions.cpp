// Grader for exercise 09: RoPE at given positions in both layouts, with a KV cache, and the ALiBi bias.
//
// Oracles: a rotation worked out by hand; Hugging Face Llama's apply_rotary_pos_emb (half) and a
// complex-product reference (interleaved) from tests/fixtures/positions (scripts/make-fixtures-positions);
// the library's RoPE and ALiBi (src/headwise/reference/positions.hpp, tests/positions_test.cpp);
// for the cache, the full causal recompute with every token rotated at its own position, in double
// precision (attention_reference). A wrong rotation is explained by stage: which tensor, which
// token and position, which pair of dimensions, and the angle it was rotated by. Tolerance:
// grade::Tolerance, widened for RoPE by what a float32 angle may be off at the last position
// (rope_tolerance): angles computed in float32, as transformers computes them, are accepted.
#include "09_positions.hpp"
#include "grade.hpp"
#include "search.hpp"

#include "headwise/base/random.hpp"
#include "headwise/inference/kv_cache.hpp"
#include "headwise/io/npy.hpp"
#include "headwise/reference/positions.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <utility>
#include <numbers>

using namespace headwise;
using grade::Ex09;
using rotary::Layout;

namespace {

const char* name_of(Layout layout) { return layout == Layout::half ? "half" : "interleaved"; }

Rope rope_of(double base, Layout layout) {
    return Rope{base, layout == Layout::half ? RopeLayout::half : RopeLayout::interleaved};
}

// An angle in (-pi, pi].
double wrapped(double a) { return std::remainder(a, 2.0 * std::numbers::pi); }

// RoPE's tolerance: the default (1e-4 + 1e-4 |expected|) plus what an angle computed in float32
// may be off by at the last position. transformers computes its angles in float32 (its fixtures
// too), and so may a learner: position p times theta rounds to a float with an error of about
// 6e-8 p rad, which moves a rotated value by up to ~2e-7 p times its size (a few roundings). Such
// code is accepted; a wrong formula (theta, position, pairing, sign) is off by far more.
grade::Tolerance rope_tolerance(std::size_t last_position) {
    const double angle = 2e-7 * double(last_position);
    return {1e-4 + angle, 1e-4 + angle};
}

// Length of token t's vector (every dim): a rotation of pairs, however paired, keeps it.
double token_length(const Tensor4& x, std::size_t b, std::size_t h, std::size_t t) {
    double sum = 0;
    for (std::size_t c = 0; c < x.shape()[3]; ++c) sum += double(x(b, h, t, c)) * double(x(b, h, t, c));
    return std::sqrt(sum);
}

// A pair whose length changed (ny, was nx): what the token's whole vector shows. Its length kept:
// the dims were paired otherwise. The length of another input token: that token's values. Else
// only the fact: a rotation keeps lengths, so one of the two rotated values is computed wrong.
std::string not_a_rotation(const Tensor4& x, const Tensor4& y, std::size_t b, std::size_t h, std::size_t t,
                           const std::string& where, double nx, double ny) {
    const double got = token_length(y, b, h, t), was = token_length(x, b, h, t);
    const auto same = [](double u, double v) { return std::abs(u - v) <= 1e-3 * (1.0 + v); };
    const std::string head =
        fmt::format("{}: not a rotation of the input pair (length {:.4g}, was {:.4g})", where, ny, nx);
    if (same(got, was)) return head + ": the token's whole vector kept its length, so its dims were paired otherwise";
    for (std::size_t u = 0; u < x.shape()[2]; ++u)
        if (u != t && same(got, token_length(x, b, h, u)))
            return head +
                   fmt::format(": its vector has the length of input token {}'s -- that token's values here?", u);
    return head +
           ": a rotation keeps every pair's length, so one of x_a cos - x_b sin and x_b cos + x_a sin is "
           "computed otherwise";
}

// Explains a wrong rotation of x (B, H, N, d_head), token n at position first + n: the first pair
// of dimensions (in the expected layout) that differs, and what the subject did to it.
std::function<std::string(const Tensor4&)> explain_rotation(const std::string& tensor, const Tensor4& x,
                                                            std::size_t first, double base, Layout layout,
                                                            grade::Tolerance tol) {
    return [=](const Tensor4& y) -> std::string {
        if (y.shape() != x.shape()) return "";
        const Tensor4 expected = apply_rope(x, rope_of(base, layout), first);
        const std::size_t d = x.shape()[3];
        for (std::size_t b = 0; b < x.shape()[0]; ++b)
            for (std::size_t h = 0; h < x.shape()[1]; ++h)
                for (std::size_t t = 0; t < x.shape()[2]; ++t)
                    for (std::size_t c = 0; c < d; ++c) {
                        if (grade::agrees(y(b, h, t, c), expected(b, h, t, c), tol)) continue;
                        const std::size_t i = layout == Layout::half ? c % (d / 2) : c / 2;
                        const auto [pa, pb] =
                            rope_pair(i, d, layout == Layout::half ? RopeLayout::half : RopeLayout::interleaved);
                        // A pair never written is not a rotation of any kind: the fill's own clause says it.
                        if (grade::never_written(y(b, h, t, pa)) || grade::never_written(y(b, h, t, pb))) continue;
                        const double xa = x(b, h, t, pa), xb = x(b, h, t, pb), ya = y(b, h, t, pa), yb = y(b, h, t, pb);
                        const std::size_t p = first + t;
                        const double theta = std::pow(base, -2.0 * double(i) / double(d));
                        const std::string where =
                            fmt::format("{} token {} (position {}), pair {} = dims ({}, {})", tensor, t, p, i, pa, pb);
                        const double nx = std::hypot(xa, xb), ny = std::hypot(ya, yb);
                        if (std::abs(nx - ny) > 1e-3 * (1.0 + nx)) return not_a_rotation(x, y, b, h, t, where, nx, ny);
                        const double got = std::atan2(xa * yb - xb * ya, xa * ya + xb * yb);
                        const double want = wrapped(double(p) * theta);
                        std::string why;
                        if (std::abs(wrapped(got + want)) < 1e-3 && std::abs(want) > 1e-3)
                            why = ": the opposite direction";
                        else if (std::abs(wrapped(got - double(p + 1) * theta)) < 1e-3)
                            why = fmt::format(": the angle of position {}, one too far", p + 1);
                        else if (std::abs(wrapped(got - double(t) * theta)) < 1e-3 && first != 0)
                            why = fmt::format(": the angle of position {}, counted from 0 instead of {}", t, first);
                        else if (std::abs(got) < 1e-6)
                            why = ": not rotated at all";
                        return fmt::format(
                            "{}: rotated by {:.4f} rad, expected position x theta_{} = {} x {:.4g} = "
                            "{:.4f} rad (mod 2 pi){}",
                            where, got, i, p, theta, want, why);
                    }
        return "";
    };
}

// ---------------------------------------------------------------------------------------------
// Part 1: apply_rope.

void expect_rope(const std::string& label, const Tensor4& x, std::size_t first, double base, Layout layout,
                 const Tensor4& expected) {
    grade::expect<Ex09>(
        {.what = fmt::format("apply_rope(x {}, first_position = {}, base = {:g}, {}), {}", grade::shape_of(x), first,
                             base, name_of(layout), label),
         .dims = "B, H, token, dim",
         .tol = rope_tolerance(first + x.shape()[2]),
         .explain = explain_rotation("x", x, first, base, layout, rope_tolerance(first + x.shape()[2]))},
        [&](const Ex09& ex) { return ex.apply_rope(x, first, base, layout); }, expected);
}

const std::filesystem::path fixtures = std::filesystem::path(HEADWISE_FIXTURES_DIR) / "positions";

Tensor4 load4(const std::filesystem::path& file) { return npy::to_tensor<4>(npy::read(file), file.string()); }

// The PyTorch fixtures at position scale 1 (the exercise has no interpolation).
void expect_fixtures(Layout layout) {
    std::ifstream in(fixtures / "manifest.json");
    const auto manifest = nlohmann::json::parse(in);
    for (const auto& c : manifest.at("rope_cases")) {
        if (c.at("position_scale").get<double>() != 1.0) continue;
        const std::filesystem::path dir = fixtures / c.at("name").get<std::string>();
        const std::string suffix = std::string(name_of(layout)) + ".npy";
        const std::string source = layout == Layout::half ? "vs Llama's apply_rotary_pos_emb (transformers)"
                                                          : "vs the complex-product reference";
        for (const char* t : {"q", "k"}) {
            expect_rope(source, load4(dir / (std::string(t) + ".npy")), c.at("first_position").get<std::size_t>(),
                        c.at("base").get<double>(), layout, load4(dir / (std::string(t) + "_" + suffix)));
        }
    }
}

}  // namespace

TEST_CASE("apply_rope: one token at position 1, d_head = 4, base 100, worked by hand", "[ex09][part1]") {
    // theta_0 = 1, theta_1 = 100^(-1/2) = 0.1; x = (1, 2, 0, 3).
    const Tensor4 x = {{{{1.0f, 2.0f, 0.0f, 3.0f}}}};  // (1, 1, 1, 4)
    const double c0 = std::cos(1.0), s0 = std::sin(1.0), c1 = std::cos(0.1), s1 = std::sin(0.1);
    // half: pairs (0, 2) and (1, 3)
    const Tensor4 half = {{{{float(c0), float(2 * c1 - 3 * s1), float(s0), float(3 * c1 + 2 * s1)}}}};
    // interleaved: pairs (0, 1) and (2, 3)
    const Tensor4 inter = {{{{float(c0 - 2 * s0), float(2 * c0 + s0), float(-3 * s1), float(3 * c1)}}}};
    expect_rope("worked by hand", x, 1, 100.0, Layout::half, half);
    expect_rope("worked by hand", x, 1, 100.0, Layout::interleaved, inter);
}

TEST_CASE("apply_rope: half layout matches Llama's apply_rotary_pos_emb, positions from 0, 37, 3 and 1000",
          "[ex09][part1]") {
    expect_fixtures(Layout::half);
}

TEST_CASE("apply_rope: interleaved layout matches the RoFormer / original Llama complex product", "[ex09][part1]") {
    expect_fixtures(Layout::interleaved);
}

TEST_CASE("apply_rope: B = 2, H = 3, 16 tokens, d_head 32, both layouts and bases, vs the library", "[ex09][part1]") {
    Random rng(91);
    const Tensor4 x = rng.normal<4>({2, 3, 16, 32});
    for (const Layout layout : {Layout::half, Layout::interleaved})
        for (const double base : {10000.0, 500000.0})
            expect_rope("vs headwise::apply_rope", x, 5, base, layout, apply_rope(x, rope_of(base, layout), 5));
}

// ---------------------------------------------------------------------------------------------
// Part 2: rope_append -- the KV cache.

namespace {

struct CacheProblem {
    std::size_t batch, heads, kv_heads, d_head, steps, prompt;
    std::uint64_t seed;
    std::size_t chunk = 1;  // after the prompt: this many tokens a step (a chunked prefill), the last step fewer
    std::string label() const {
        if (chunk > 1)
            return fmt::format(
                "B = {}, H = {}, H_kv = {}, d_head = {}: a prompt of {} tokens, then {} more {} at a time", batch,
                heads, kv_heads, d_head, prompt, steps - prompt, chunk);
        return fmt::format("B = {}, H = {}, H_kv = {}, d_head = {}: a prompt of {} tokens, then {} one at a time",
                           batch, heads, kv_heads, d_head, prompt, steps - prompt);
    }
};

// What a run of rope_append leaves behind: the cache, and every returned q side by side.
struct CacheRun {
    rotary::RopeCache cache;
    Tensor4 q;  // (B, H, steps, d_head)
};

// An empty cache as a server hands one over: length 0, its slots still holding what an earlier
// sequence left there. Nothing in them is 0 to rely on: a `+=` into the cache shows.
rotary::RopeCache empty_cache(const CacheProblem& p, std::size_t capacity) {
    Random rng(p.seed + 1000);
    const std::array<std::size_t, 4> shape{p.batch, p.kv_heads, capacity, p.d_head};
    Tensor4 k = rng.normal<4>(shape), v = rng.normal<4>(shape);
    return {std::move(k), std::move(v), 0};
}

CacheRun run_cache(const Ex09& ex, const CacheProblem& p, const Tensor4& q, const Tensor4& k, const Tensor4& v,
                   double base, Layout layout, std::size_t capacity) {
    CacheRun r{empty_cache(p, capacity), Tensor4::from_shape(q.shape())};
    std::optional<Tensor4> wrong_shape;  // the first q of the wrong shape: the report names it
    std::size_t t = 0;
    while (t < p.steps) {  // every step runs: the cache then holds what all of them wrote
        // The prompt at once, then a token (or a chunk of them) per step.
        const std::size_t n = t == 0 ? p.prompt : std::min(p.chunk, p.steps - t);
        const auto block = [&](const Tensor4& a) -> Tensor4 {
            return xt::view(a, xt::all(), xt::all(), xt::range(t, t + n), xt::all());
        };
        const Tensor4 q_rot = ex.rope_append(r.cache, block(q), block(k), block(v), base, layout);
        if (q_rot.shape() != block(q).shape()) {
            if (!wrong_shape) wrong_shape = q_rot;
        } else {
            xt::view(r.q, xt::all(), xt::all(), xt::range(t, t + n), xt::all()) = q_rot;
        }
        t += n;
    }
    if (wrong_shape) r.q = *wrong_shape;
    return r;
}

// Every token's output when each query attends over the cache as it stood after its own step,
// computed from what the subject returned and stored (causal: token t sees keys 0 .. t).
Tensor4 attend_over(const CacheRun& r, std::size_t steps) {
    AttentionOptions causal;
    causal.causal = true;
    const Tensor4 k = xt::view(r.cache.k, xt::all(), xt::all(), xt::range(0, steps), xt::all());
    const Tensor4 v = xt::view(r.cache.v, xt::all(), xt::all(), xt::range(0, steps), xt::all());
    const std::size_t g = r.q.shape()[1] / k.shape()[1];
    return attention_reference(r.q, repeat_kv(k, g), repeat_kv(v, g), causal);
}

void expect_cache(const CacheProblem& p, double base, Layout layout) {
    Random rng(p.seed);
    const Tensor4 q = rng.normal<4>({p.batch, p.heads, p.steps, p.d_head});
    const Tensor4 k = rng.normal<4>({p.batch, p.kv_heads, p.steps, p.d_head});
    const Tensor4 v = rng.normal<4>({p.batch, p.kv_heads, p.steps, p.d_head});
    const std::size_t capacity = p.steps + 2;  // room to spare: the last two positions stay as handed over
    std::map<std::pair<decltype(Ex09::rope_append), int>, CacheRun> runs;
    const auto run = [&](const Ex09& ex) -> const CacheRun& {
        const auto it = runs.find({ex.rope_append, grade::search::selected_variant()});
        if (it != runs.end()) return it->second;
        return runs
            .emplace(std::pair{ex.rope_append, grade::search::selected_variant()},
                     run_cache(ex, p, q, k, v, base, layout, capacity))
            .first->second;
    };
    const Rope rope = rope_of(base, layout);
    const std::string label = fmt::format("{}, base {:g}, {} layout", p.label(), base, name_of(layout));
    const rotary::RopeCache handed_over = empty_cache(p, capacity);
    Tensor4 expected_k = handed_over.k, expected_v = handed_over.v;
    xt::view(expected_k, xt::all(), xt::all(), xt::range(0, p.steps), xt::all()) = apply_rope(k, rope);
    xt::view(expected_v, xt::all(), xt::all(), xt::range(0, p.steps), xt::all()) = v;
    const Tensor4 k_padded = xt::concatenate(
        xt::xtuple(k, xt::view(handed_over.k, xt::all(), xt::all(), xt::range(p.steps, capacity), xt::all())), 2);
    const bool k_ok = grade::expect<Ex09>(
        {.what = "cache.k after " + label,
         .dims = "B, H_kv, position, dim",
         .tol = rope_tolerance(capacity),
         .explain = explain_rotation("cache.k", k_padded, 0, base, layout, rope_tolerance(capacity))},
        [&](const Ex09& ex) { return run(ex).cache.k; }, expected_k);
    const bool v_ok = grade::expect<Ex09>(
        {.what = "cache.v after " + label,
         .dims = "B, H_kv, position, dim",
         .explain = [&](const Tensor4& got) -> std::string {
             if (got.shape() == expected_v.shape() && max_abs_diff(got, apply_rope(xt::eval(expected_v), rope)) < 1e-4)
                 return "cache.v holds the values rotated: v carries content and is never rotated";
             return "";
         }},
        [&](const Ex09& ex) { return run(ex).cache.v; }, expected_v);
    grade::expect<Ex09>(
        {.what = "cache.length after " + label, .dims = "tokens cached"},
        [&](const Ex09& ex) { return run(ex).cache.length; }, p.steps);
    const bool q_ok = grade::expect<Ex09>(
        {.what = "the returned q of every step, " + label,
         .dims = "B, H, token, dim",
         .tol = rope_tolerance(p.steps),
         .explain = [&, rotation = explain_rotation("q", q, 0, base, layout, rope_tolerance(p.steps))](
                        const Tensor4& got) -> std::string {
             // Another input rotated in q's place: a rotation of q's own pairs cannot tell that.
             if (got.shape() == k.shape() && max_abs_diff(got, apply_rope(k, rope)) < 1e-4)
                 return "the returned q of every step is k rotated: k is returned where q belongs";
             return rotation(got);
         }},
        [&](const Ex09& ex) { return run(ex).q; }, apply_rope(q, rope));
    // The attention built on them, vs the full causal recompute with RoPE in double precision.
    const std::size_t g = p.heads / p.kv_heads;
    AttentionOptions causal;
    causal.causal = true;
    const Tensor4 full =
        attention_reference(apply_rope(q, rope), repeat_kv(apply_rope(k, rope), g), repeat_kv(v, g), causal);
    grade::expect<Ex09>(
        {.what = "attention over the cache vs the full causal recompute with RoPE, " + label,
         .dims = "B, H, token, dim",
         .after = k_ok && v_ok && q_ok ? "cache.k, cache.v and the returned q" : ""},
        [&](const Ex09& ex) {
            const CacheRun& r = run(ex);
            if (r.q.shape() != full.shape() || r.cache.length < p.steps) return r.q;
            return attend_over(r, p.steps);
        },
        full);
}

}  // namespace

TEST_CASE("rope_append: a prompt, then one token at a time, half layout, vs the full recompute", "[ex09][part2]") {
    expect_cache({2, 4, 2, 8, 10, 4, 1}, 10000.0, Layout::half);
}

TEST_CASE("rope_append: interleaved layout, multi-query (H_kv = 1), base 500,000", "[ex09][part2]") {
    expect_cache({2, 4, 1, 16, 9, 3, 2}, 500000.0, Layout::interleaved);
}

TEST_CASE("rope_append: an empty prompt's first step, then 12 more, H = H_kv", "[ex09][part2]") {
    expect_cache({3, 2, 2, 8, 13, 1, 3}, 10000.0, Layout::half);
}

// Several tokens appended after earlier ones: each at its own position, start + t (a slip that
// gives every token of a step the same position, or start * t, shows nowhere else).
TEST_CASE("rope_append: a prompt, then chunks of 3 tokens at positions 2.., each at its own", "[ex09][part2]") {
    expect_cache({2, 4, 2, 8, 11, 2, 4, 3}, 10000.0, Layout::half);
}

// ---------------------------------------------------------------------------------------------
// Part 3: alibi_bias.

namespace {

// The library's bias (-slope |i' - j|) with the causal upper triangle set to 0.
Tensor3 causal_alibi(std::size_t heads, std::size_t n_q, std::size_t n_k, std::size_t first_query) {
    Tensor3 b = alibi_bias(heads, n_q, n_k, first_query);
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < n_q; ++i)
            for (std::size_t j = first_query + i + 1; j < n_k; ++j) b(h, i, j) = 0.0f;
    return b;
}

void expect_alibi(std::size_t heads, std::size_t n_q, std::size_t n_k, std::size_t first_query) {
    const std::vector<double> slopes = alibi_slopes(heads);
    grade::expect<Ex09>(
        {.what = fmt::format("alibi_bias(H = {}, N_q = {}, N_k = {}, first_query = {})", heads, n_q, n_k, first_query),
         .dims = "head, query, key",
         .explain = [&](const Tensor3& got) -> std::string {
             // The slope the subject used per head, read from the last query's row: bias(h, i, j) /
             // -(first_query + i - j). Only a row that is one slope times those distances at every
             // visible key tells a slope; a row whose distances are not those tells none, and neither
             // does a row of zeros (a slope of 0, or a row computed for the wrong position: which one,
             // zeros cannot say).
             const std::size_t last = first_query + n_q - 1;  // the last query's position
             if (got.shape() != std::array<std::size_t, 3>{heads, n_q, n_k} || last < 1 || last >= n_k + 1) return "";
             for (std::size_t h = 0; h < heads; ++h) {
                 const double slope = -double(got(h, n_q - 1, 0)) / double(last);
                 bool one_slope = std::isfinite(slope) && slope != 0.0;
                 for (std::size_t j = 1; one_slope && j < last && j < n_k; ++j)
                     one_slope = std::abs(-double(got(h, n_q - 1, j)) / double(last - j) - slope) <=
                                 1e-4 * std::max(std::abs(slope), 1e-6);
                 if (!one_slope) return "";
                 if (std::abs(slope - slopes[h]) > 1e-4 * slopes[h])
                     return fmt::format("head {}'s slope reads {:.6g} (2^{:.3f}), expected {:.6g} (2^{:.3f})", h, slope,
                                        std::log2(std::abs(slope)), slopes[h], std::log2(slopes[h]));
             }
             return "";
         }},
        [&](const Ex09& ex) { return ex.alibi_bias(heads, n_q, n_k, first_query); },
        causal_alibi(heads, n_q, n_k, first_query));
}

}  // namespace

TEST_CASE("alibi_bias: H = 8, a power of two: slopes 1/2 .. 1/256", "[ex09][part3]") { expect_alibi(8, 6, 6, 0); }

TEST_CASE("alibi_bias: H = 12, 6, 3 and 1, not powers of two or the smallest: the paper's rule", "[ex09][part3]") {
    expect_alibi(12, 5, 5, 0);
    expect_alibi(6, 7, 7, 0);
    expect_alibi(3, 4, 4, 0);
    expect_alibi(1, 3, 3, 0);
}

TEST_CASE("alibi_bias: one decode row, the query at position 6 over keys 0..6, and a block at 3", "[ex09][part3]") {
    expect_alibi(4, 1, 7, 6);
    expect_alibi(4, 4, 7, 3);
}
