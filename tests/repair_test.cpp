// tests/repair_test.cpp -- gradekit/repair.hpp's edits: the single-edit variants of a learner's own
// file (gradekit/mutants.hpp's generate_own_mutants), made where their code is, named by their
// functions, lambdas and lines, and each on a line of its own in the schemata; and the order in
// which the pair search tries two of them together.
#include "gradekit/mutants.hpp"
#include "gradekit/repair.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>

using headwise::gradekit::generate_own_mutants;
using headwise::gradekit::make_schemata;
using headwise::gradekit::Mutants;
using headwise::gradekit::rank_edit_pairs;
using headwise::gradekit::ScreenedEdit;
using headwise::gradekit::Variant;

namespace {

// A learner's file in their own style: a helper in an anonymous namespace, std algorithms, a
// named lambda, an int start value.
const std::string own_file = R"(// my version
#include "single_head.hpp"

#include <numeric>

namespace headwise::ex01 {

namespace {
void softmax_row(float* first, float* last) {
    const float top = *std::max_element(first, last);
    const float total = std::accumulate(first, last, 0);
    for (float* p = first; p != last; ++p) *p = *p / total - top;
}
}  // namespace

float attention(std::size_t n, std::size_t d) {
    auto dot = [&](std::size_t i, std::size_t j) { return static_cast<float>(i * d + j); };
    float sum = 0.0f;
    for (std::size_t i = 0; i < n; ++i) sum += dot(i, n - 1);
    return sum;
}

}  // namespace headwise::ex01
)";

// Whether `m` holds an edit of `kind` on `line` whose line then reads `edited`.
bool has_edit(const Mutants& m, int line, const std::string& kind, const std::string& edited) {
    return std::ranges::any_of(
        m.variants, [&](const Variant& v) { return v.line == line && v.kind == kind && v.edited_line == edited; });
}

const Variant* find(const Mutants& m, const std::string& kind, int line) {
    const auto v = std::ranges::find_if(m.variants, [&](const Variant& x) { return x.kind == kind && x.line == line; });
    return v == m.variants.end() ? nullptr : &*v;
}

}  // namespace

TEST_CASE("repair: a learner's own functions are edited where they are, named by their own names") {
    const Mutants m = generate_own_mutants(own_file);
    REQUIRE_FALSE(m.variants.empty());
    const Variant* in_helper = find(m, "/ for *", 12);
    REQUIRE(in_helper != nullptr);
    CHECK(in_helper->context == "in softmax_row, the loop over p");
    const Variant* in_function = find(m, "< for <=", 19);
    REQUIRE(in_function != nullptr);
    CHECK(in_function->context.starts_with("in attention"));
    CHECK(in_function->original_line == "for (std::size_t i = 0; i < n; ++i) sum += dot(i, n - 1);");
}

TEST_CASE("repair: a helper returning a template with a number or a nested template in it is a function too") {
    const std::string file = R"(std::vector<std::vector<float>> rows(int n) {
    int m = n + 1;
    return std::vector<std::vector<float>>(m);
}
xt::xtensor<float, 2> scaled(const xt::xtensor<float, 2>& x, float s) {
    return x * s;
}
)";
    const Mutants m = generate_own_mutants(file);
    const auto in = [&](int line) {
        return std::ranges::any_of(m.variants, [&](const Variant& v) { return v.line == line; });
    };
    CHECK(in(2));
    CHECK(in(6));
    for (const Variant& v : m.variants) CHECK(v.context == (v.line < 5 ? "in rows" : "in scaled"));
}

TEST_CASE("repair: a function with an attribute, const, noexcept or a trailing return type is a function too") {
    const std::string file = R"([[nodiscard]] inline float thrice(float x) { return x * 3.0f; }
auto quad(float x) -> float { return x * 4.0f; }
float first(const std::vector<float>& v) noexcept {
    return v[0] + 1;
}
struct Acc {
    float total = 0;
    float mean(int n) const { return total / n; }
};
float Holder::get(int i) const {
    return data[i + 1];
}
)";
    const Mutants m = generate_own_mutants(file);
    const std::map<int, std::string> functions = {
        {1, "in thrice"}, {2, "in quad"}, {4, "in first"}, {8, "in mean"}, {11, "in get"}};
    for (const auto& [line, context] : functions) {
        INFO("line " << line);
        CHECK(
            std::ranges::any_of(m.variants, [&](const Variant& v) { return v.line == line && v.context == context; }));
    }
}

TEST_CASE(
    "repair: the eighth blind trial's slips are edits -- a brace-initialised stride, a reset, an increment, a block") {
    const std::string file = R"(struct Strides { std::size_t row, col; };
void merge(float* dst, std::size_t N, std::size_t D, std::size_t dh) {
    const Strides o{N * D, dh};
    std::vector<float> visible;
    std::vector<float> logits;
    for (std::size_t i = 0; i < N; ++i) {
        visible.clear();
        for (std::size_t t = 0; t < N; ++t) {
            visible.push_back(float(t));
            logits.push_back(float(i));
            const std::size_t j = N - t;
            dst[o.row * i + t] = logits[t] + dst[j];
        }
    }
}
void step(State& state, const Tensor1& bias, std::size_t which, std::size_t d) {
    const int t = state.step++;
    auto b = xt::view(bias, xt::range(0, d));
    auto shape = std::array<std::size_t, 4>{d, d, d, d};
}
)";
    const Mutants m = generate_own_mutants(file);
    CHECK(has_edit(m, 3, "variable swap", "const Strides o{N * D, D};"));
    CHECK(has_edit(m, 7, "a reset put back beside its twin", "visible.clear(); logits.clear();"));
    CHECK(has_edit(m, 12, "index swap", "dst[o.row * i + t] = logits[j] + dst[j];"));
    CHECK(has_edit(m, 17, "the other increment", "const int t = ++state.step;"));
    CHECK(has_edit(m, 18, "the block of an index", "auto b = xt::view(bias, xt::range(which * d, (which + 1) * d));"));
    // A template's argument is a type: no edit of its number, its closing bracket or its name.
    CHECK(std::ranges::none_of(m.variants, [](const Variant& v) {
        return v.line == 19 && (v.edited_line.find("std::array<std::size_t, 4>{") == std::string::npos);
    }));
}

TEST_CASE("repair: a count advanced after a helper's store, a cast's operand of another type") {
    const std::string file = R"(void decode(Cache& cache, const Tensor2& k) {
    const std::size_t pos = cache.length;
    append_row(cache.k, k, pos);
    for (std::size_t n = 0; n < 4; ++n) {
        const std::int32_t target = targets(n);
        const double onehot = 3 == std::size_t(n) ? 1.0 : 0.0;
    }
    const int bound = pos + 1;
    const int usable = int(pos) - 1;
}
)";
    const Mutants m = generate_own_mutants(file);
    CHECK(has_edit(m, 3, "a count advanced", "append_row(cache.k, k, pos); cache.length = pos + 1;"));
    CHECK(has_edit(m, 6, "index swap", "const double onehot = 3 == std::size_t(target) ? 1.0 : 0.0;"));
    CHECK(has_edit(m, 9, "variable swap", "const int usable = int(bound) - 1;"));
}

TEST_CASE("repair: a named lambda's body is edited too, named by the lambda") {
    const Mutants m = generate_own_mutants(own_file);
    const Variant* v = find(m, "* for /", 17);
    REQUIRE(v != nullptr);
    CHECK(v->context == "in dot");
    CHECK(v->edited_line.find("i / d + j") != std::string::npos);
}

TEST_CASE("repair: an int start value that ends a call's arguments is made a float") {
    const Mutants m = generate_own_mutants(own_file);
    const Variant* v = find(m, "an int for a float", 11);
    REQUIRE(v != nullptr);
    CHECK(v->edited_line == "const float total = std::accumulate(first, last, 0.0f);");
}

TEST_CASE("repair: nothing outside a function's body is edited (includes, namespaces, declarations)") {
    const Mutants m = generate_own_mutants(own_file);
    for (const Variant& v : m.variants) {
        INFO(v.line << ": " << v.kind << ": " << v.edited_line);
        CHECK(v.line >= 10);
        CHECK(v.line <= 20);
    }
}

TEST_CASE("repair: in the schemata every edit is an alternative on a line of its own") {
    const Mutants m = generate_own_mutants(own_file);
    std::vector<int> all;
    for (const Variant& v : m.variants) all.push_back(v.id);
    const auto schemata = make_schemata(own_file, m, all);
    // Each line one edit's; an edit of two regions (two values swapped across lines) has two lines.
    std::set<int> edits;
    for (const auto& [line, id] : schemata.line_to_variant) edits.insert(id);
    CHECK(edits.size() == m.variants.size());
    CHECK(schemata.line_to_variant.size() <= m.variants.size() + 2);
    CHECK(schemata.text.find("HW_M(") != std::string::npos);
    CHECK(schemata.text.find("#include \"single_head.hpp\"") != std::string::npos);
}

TEST_CASE("repair: a learner's std algorithm gets its other end, a square root added or dropped") {
    const std::string file = R"(namespace a {
float f(const float* x, std::size_t n, std::size_t d) {
    const float top = *std::min_element(x, x + n);
    const float s = 1.0f / static_cast<float>(d);
    return top * s / std::sqrt(static_cast<float>(n));
}
}  // namespace a
)";
    const Mutants m = generate_own_mutants(file);
    const Variant* other_end = find(m, "std::max_element for std::min_element", 3);
    REQUIRE(other_end != nullptr);
    CHECK(other_end->edited_line == "const float top = *std::max_element(x, x + n);");
    const Variant* added = find(m, "a square root added", 4);
    REQUIRE(added != nullptr);
    CHECK(added->edited_line == "const float s = 1.0f / std::sqrt(static_cast<float>(d));");
    const Variant* dropped = find(m, "a square root dropped", 5);
    REQUIRE(dropped != nullptr);
    CHECK(dropped->edited_line == "return top * s / static_cast<float>(n);");
    CHECK(find(m, "a square root added", 5) == nullptr);  // not inside the root it already has
}

TEST_CASE("repair: a value computed and never read is put back as a term, a factor or a divisor after it") {
    const std::string file = R"(namespace a {
void f(float* w, std::size_t n) {
    const float top = *std::max_element(w, w + n);
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j) sum += (w[j] = std::exp(w[j]));
}
}  // namespace a
)";
    const Mutants m = generate_own_mutants(file);
    std::vector<std::string> put_back;
    for (const Variant& v : m.variants)
        if (v.kind == "an unused value put back") put_back.push_back(v.edited_line);
    CHECK(std::ranges::count(put_back, "for (std::size_t j = 0; j < n; ++j) sum += (w[j] = std::exp((w[j] - top)));") ==
          1);
    CHECK(std::ranges::count(put_back, "for (std::size_t j = 0; j < n; ++j) sum += (w[j] = std::exp(w[j] * top));") ==
          1);
    // Never where a value is assigned (w[j] = ...), nor before the declaration.
    CHECK(std::ranges::none_of(put_back,
                               [](const std::string& l) { return l.find("((w[j] - top) =") != std::string::npos; }));
    CHECK(std::ranges::none_of(m.variants,
                               [](const Variant& v) { return v.kind == "an unused value put back" && v.line < 4; }));
    // A value that is read gets none.
    const Mutants read = generate_own_mutants(R"(namespace a {
float g(float x) {
    const float top = x * 2.0f;
    return std::exp(x - top);
}
}  // namespace a
)");
    CHECK(std::ranges::none_of(read.variants, [](const Variant& v) { return v.kind == "an unused value put back"; }));
}

TEST_CASE("repair: a learner's integer is doubled and halved, members come from the whole file, sizes swap") {
    const std::string file = R"(namespace a {
void put(Cache& cache, float x) {
    cache.k(0) = x;
    cache.v(0) = x;
}
float get(const Cache& cache, const Tensor& q, const Tensor& v) {
    const auto d = q.shape()[1];
    const auto d_v = v.shape()[1];
    const auto row = view_of(q, d);
    float* dst = nullptr + 16 + kHalf;
    return cache.k(0) / static_cast<float>(d_v) + float(d) + kWhole;
}
}  // namespace a
)";
    const Mutants m = generate_own_mutants(file);
    const auto has = [&](int line, const std::string& edited) {
        return std::ranges::any_of(m.variants,
                                   [&](const Variant& v) { return v.line == line && v.edited_line == edited; });
    };
    CHECK(has(10, "float* dst = nullptr + 32 + kHalf;"));
    CHECK(has(10, "float* dst = nullptr + 8 + kHalf;"));
    CHECK(has(10, "float* dst = nullptr + 16 + kWhole;"));                               // a named constant for another
    CHECK(has(11, "return cache.v(0) / static_cast<float>(d_v) + float(d) + kWhole;"));  // cache.v only in put()
    CHECK(has(11, "return cache.k(0) / static_cast<float>(d) + float(d) + kWhole;"));    // two sizes made by shape()
    // An `auto` made by a call (a view, a tensor) is no size: it never stands for one.
    CHECK_FALSE(has(11, "return cache.k(0) / static_cast<float>(row) + float(d) + kWhole;"));
}

TEST_CASE("repair: a struct's members of one type, read from a header, are a family the learner's member swaps with") {
    const auto structs = headwise::gradekit::header_structs(R"(
struct BlockQ4_1 {
    std::uint16_t d;  // half float
    std::uint16_t m;  // the minimum
    std::uint8_t qs[16];
    float scale() const;
};
)");
    REQUIRE(structs.size() == 1);
    CHECK(structs[0].name == "BlockQ4_1");
    CHECK(structs[0].members == std::vector<std::pair<std::string, std::string>>{
                                    {"d", "std::uint16_t"}, {"m", "std::uint16_t"}, {"qs", "std::uint8_t[16]"}});
    const Mutants m = generate_own_mutants(R"(namespace a {
float lo(const BlockQ4_1& block) {
    return fp16_to_float(block.d);
}
}  // namespace a
)",
                                           structs);
    CHECK(std::ranges::any_of(m.variants,
                              [](const Variant& v) { return v.edited_line == "return fp16_to_float(block.m);"; }));
}

TEST_CASE("repair: a member is swapped only for one of its own type, from the struct that holds what the file uses") {
    const auto structs = headwise::gradekit::header_structs(R"(
struct Cache { Tensor4 k; Tensor4 v; std::size_t length = 0; };
struct Args { int seq; bool causal; float scale; };
struct FlashArgs { int seq; bool causal; bool bf16; int tile; };
)");
    const Mutants m = generate_own_mutants(R"(namespace a {
float first(const Cache& cache, const Args& a) {
    if (cache.length == 0 || !a.causal) return a.scale;
    return cache.k(0, 0, 0, 0) + cache.v(0, 0, 0, 0);
}
}  // namespace a
)",
                                           structs);
    const auto has = [&](const std::string& line) {
        return std::ranges::any_of(m.variants, [&](const Variant& v) { return v.edited_line == line; });
    };
    CHECK(has("return cache.v(0, 0, 0, 0) + cache.v(0, 0, 0, 0);"));             // Tensor4 for Tensor4
    CHECK_FALSE(has("return cache.length(0, 0, 0, 0) + cache.v(0, 0, 0, 0);"));  // a size is no tensor
    CHECK_FALSE(has("if (cache.k == 0 || !a.causal) return a.scale;"));          // nor a tensor a size
    // `a` uses seq? no: causal and scale -- only Args holds scale: FlashArgs's bf16 is not a's.
    CHECK_FALSE(has("if (cache.length == 0 || !a.bf16) return a.scale;"));
}

TEST_CASE("repair: the edits of a learner's file compile -- no const written, no name a lambda does not capture") {
    const Mutants m = generate_own_mutants(R"(namespace a {
void softmax_row(const float* src, float* dst, int n) {
    const float peak = *std::max_element(src, src + n);
    std::transform(src, src + n, dst, [peak](float s) { return std::exp(s - peak); });
    const float total = std::accumulate(dst, dst + n, 0.0f);
    std::transform(dst, dst + n, dst, [total](float e) { return e / total; });
    const int last = n - 1;
    for (int j = 0; j < n; j += 2) dst[j] = dst[last] / static_cast<float>(n);
}
}  // namespace a
)");
    const auto any = [&](const std::function<bool(const std::string&)>& bad) {
        return std::ranges::any_of(m.variants, [&](const Variant& v) { return bad(v.edited_line); });
    };
    const auto has = [&](const std::string& line) { return any([&](const std::string& l) { return l == line; }); };
    CHECK_FALSE(has("std::transform(dst, dst + n, dst, [peak](float e) { return e / total; });"));  // the list
    CHECK_FALSE(has("std::transform(dst, dst + n, dst, [total](float e) { return e / peak; });"));  // not captured
    CHECK_FALSE(has("for (int j = 0; j < n; last += 2) dst[j] = dst[last] / static_cast<float>(n);"));
    CHECK_FALSE(has("for (int j = 0; j < n; 2 * j += 2) dst[j] = dst[last] / static_cast<float>(n);"));
    CHECK_FALSE(any([](const std::string& l) { return l.find("static_cast /") != std::string::npos; }));
    CHECK(has("for (int j = 0; j < n; j += 2) dst[j] = static_cast<float>(n) / dst[last];"));
}

TEST_CASE("repair: an edit that passes a check alone is tried with every other, and no two others are") {
    const ScreenedEdit theirs{0, 0, 0, {{"f: a", "f(x), weights: 6 of 20 values differ"}, {"f: b", "f(y): wrong"}}};
    const std::vector<ScreenedEdit> edits = {
        {1, 1, 10, theirs.failures},  // changed nothing
        {2, 2, 11, {{"f: a", "f(x), output: 4 of 20 values differ"}, {"f: b", "f(y): wrong"}}},
        {3, 3, 12, {{"f: a", "f(x), weights: 9 of 20 values differ"}}},  // "f: b" passes
        {4, 4, 13, {{"f: a", "f(x), weights: 2 of 20 values differ"}, {"f: b", "f(y): wrong"}}},
    };
    // 3 first, then 4 (the fewest values differing), 2, 1; each pair written with its lower line first.
    CHECK(rank_edit_pairs(theirs, edits, 100) == std::vector<std::pair<int, int>>{{3, 4}, {2, 3}, {1, 3}});
    CHECK(rank_edit_pairs(theirs, edits, 2) == std::vector<std::pair<int, int>>{{3, 4}, {2, 3}});
}

TEST_CASE("repair: with no edit passing a check alone, pairs with one closer edit go by the sum of their ranks") {
    const ScreenedEdit theirs{0, 0, 0, {{"f: a", "f(x), weights: 6 of 20 values differ"}, {"f: b", "f(y): wrong"}}};
    const std::vector<ScreenedEdit> edits = {
        {1, 1, 10, theirs.failures},                                                              // changed nothing
        {2, 2, 11, {{"f: a", "f(x), output: 4 of 20 values differ"}, {"f: b", "f(y): wrong"}}},   // fewer
        {4, 4, 13, {{"f: a", "f(x), weights: 8 of 20 values differ"}, {"f: b", "f(y): wrong"}}},  // more
        {5, 5, 14, {{"f: a", "f(x), weights: 2 of 20 values differ"}, {"f: b", "f(y): wrong"}}},  // the fewest
        {6, 6, 15, {{"f: a", "f(x), weights: 7 of 20 values differ"}, {"f: b", "f(y): NaN"}}},    // two changed
    };
    // Ranked 5, 2 (fewer values differing), 6, 4, 1: the first with the second, with the third, then
    // the first with the fourth and the second with the third, ...; never two of 6, 4 and 1.
    const std::vector<std::pair<int, int>> all = {{2, 5}, {5, 6}, {4, 5}, {2, 6}, {1, 5}, {2, 4}, {1, 2}};
    CHECK(rank_edit_pairs(theirs, edits, 100) == all);
    CHECK(rank_edit_pairs(theirs, edits, 3) == std::vector<std::pair<int, int>>(all.begin(), all.begin() + 3));
    // Counts compared, no values: two edits that change them could make up for each other.
    const ScreenedEdit counted{0, 0, 0, {{"f: a", "f(8): got 64, expected 8"}}};
    const std::vector<ScreenedEdit> counts = {{1, 1, 10, {{"f: a", "f(8): got 512, expected 8"}}},
                                              {2, 2, 11, {{"f: a", "f(8): got 1, expected 8"}}}};
    CHECK(rank_edit_pairs(counted, counts, 100).empty());
}

TEST_CASE("repair: two edits of one line or of one region are never tried as a pair") {
    const ScreenedEdit theirs{0, 0, 0, {{"f: a", "f(x): 10 of 20 values differ"}}};
    const std::vector<ScreenedEdit> one_line = {{1, 1, 10, {{"f: a", "f(x): 4 of 20 values differ"}}},
                                                {2, 2, 10, {{"f: a", "f(x): 3 of 20 values differ"}}}};
    CHECK(rank_edit_pairs(theirs, one_line, 100).empty());
    const std::vector<ScreenedEdit> one_region = {{1, 7, 10, {{"f: a", "f(x): 4 of 20 values differ"}}},
                                                  {2, 7, 11, {{"f: a", "f(x): 3 of 20 values differ"}}},
                                                  {3, 8, 12, {{"f: a", "f(x): 5 of 20 values differ"}}}};
    CHECK(rank_edit_pairs(theirs, one_region, 100) == std::vector<std::pair<int, int>>{{2, 3}, {1, 3}});
    CHECK(rank_edit_pairs(theirs, {one_line.front()}, 100).empty());
}

TEST_CASE("repair: a learner's omissions are put back -- a rescale, an argument, a window's step, a count's + 1") {
    const auto structs = headwise::gradekit::header_structs(R"(
struct Params { Tensor2 w_in; Tensor1 b_in; Tensor2 w_out; Tensor1 b_out; };
)");
    const Mutants m = generate_own_mutants(R"(namespace a {
template <int D, typename Row>
void update(float s, const Row& row, float& m, float& l, float* acc) {
    const float m_next = std::max(m, s);
    const float shrink = std::exp(m - m_next);
    const float p = std::exp(s - m_next);
    l = l + p;
    for (int c = 0; c < D; ++c) acc[c] = acc[c] * shrink + p * row(c);
    m = m_next;
}
Tensor3 block(const Params& p, const Tensor3& x, Cache& cache, std::size_t t, bool causal, int i, int n) {
    const Tensor3 h = linear(x, p.w_in, bias_of(p.b_in));
    const Tensor3 newest = xt::view(h, xt::all(), xt::range(t - 1, t), xt::all());
    cache.length = t;
    const int last = causal ? i : n;
    return linear(newest, p.w_out);
}
}  // namespace a
)",
                                           structs);
    const auto has = [&](const std::string& line) {
        return std::ranges::any_of(m.variants, [&](const Variant& v) { return v.edited_line == line; });
    };
    CHECK(has("l = l * shrink + p;"));  // a template of two parameters is read; its acc's rescale put back
    CHECK(has("return linear(newest, p.w_out, p.b_out);"));       // the Tensor1 never read
    CHECK_FALSE(has("return linear(newest, p.w_out, p.b_in);"));  // one the file reads is no omission
    CHECK(has("const Tensor3 newest = xt::view(h, xt::all(), xt::range(t, t + 1), xt::all());"));
    CHECK(has("cache.length = t + 1;"));
    CHECK(has("const int last = causal ? i + 1 : n;"));
}

TEST_CASE(
    "repair: a factor or a divisor the function applies elsewhere, a square's factor, a softmax's sum, a product over "
    "part of a sum") {
    const Mutants m = generate_own_mutants(R"(namespace a {
float backward(const Tensor1& dS, Tensor1& P, const Options& o, Tensor1& params, float s, std::size_t j) {
    const float scale = 1.0f / std::sqrt(4.0f);
    P(j) = s * scale;
    const float w = dS(j);
    params(j) -= o.weight_decay * params(j);
    params(j) -= o.lr * w;
    return w;
}
float loss(const Tensor1& g, std::size_t B, std::size_t N, std::size_t counted, double total) {
    const double mean_g = g(0) / double(counted);
    return float(total / double(B * N)) + float(mean_g);
}
std::uint64_t count(std::uint64_t d, std::uint64_t heads, std::uint64_t per_head, std::uint64_t out) {
    const std::uint64_t total = 3 * d * d + d;
    return total + heads * (per_head + out);
}
double grad(const Tensor1& x, double top, std::size_t n) {
    double z = 0.0;
    for (std::size_t j = 0; j < n; ++j) z += std::exp(x(j) - top);
    const double g = std::exp(x(0) - top);
    return g + std::log(z);
}
}  // namespace a
)");
    const auto has = [&](const std::string& line) {
        return std::ranges::any_of(m.variants, [&](const Variant& v) { return v.edited_line == line; });
    };
    CHECK(has("const float w = dS(j) * scale;"));                          // a constant read as a factor elsewhere
    CHECK(has("params(j) -= o.weight_decay * params(j) * o.lr;"));         // a member read as a factor elsewhere
    CHECK_FALSE(has("params(j) -= o.lr * w * o.lr;"));                     // not where it is already
    CHECK(has("return float(total / double(counted)) + float(mean_g);"));  // one divisor for the other
    CHECK(has("const std::uint64_t total = 3 * d * d + d * d;"));
    CHECK(has("return total + heads * per_head + out;"));
    CHECK(has("const double g = std::exp(x(0) - top) / z;"));  // a softmax's sum that divides nothing
}

TEST_CASE("repair: a value saved before it is overwritten is read where the learner read the overwritten one") {
    const Mutants m = generate_own_mutants(R"(namespace a {
void rotate(float* pair, double cs, double sn) {
    const double a = pair[0], b = pair[1];
    pair[0] = float(a * cs - b * sn);
    pair[1] = float(pair[1] * cs + pair[0] * sn);
}
}  // namespace a
)");
    const auto has = [&](const std::string& line) {
        return std::ranges::any_of(m.variants, [&](const Variant& v) { return v.edited_line == line; });
    };
    CHECK(has("pair[1] = float(pair[1] * cs + a * sn);"));
    CHECK_FALSE(has("const double a = a, b = pair[1];"));  // not where it is saved
    CHECK_FALSE(has("a = float(a * cs - b * sn);"));       // nor where it is written
}

TEST_CASE("repair: a functional cast gets its square root, a whole shape is no size, fminf turns to fmaxf") {
    const Mutants m = generate_own_mutants(R"(namespace a {
float f(const Tensor4& q, float x, float y) {
    const auto& shape = q.shape();
    const auto D = shape[3];
    Tensor4 g = xt::zeros<float>(shape);
    const float scale = 1.0f / float(D);
    return fminf(x, y) * scale + g(0, 0, 0, 0);
}
}  // namespace a
)");
    const auto has = [&](const std::string& line) {
        return std::ranges::any_of(m.variants, [&](const Variant& v) { return v.edited_line == line; });
    };
    CHECK(has("const float scale = 1.0f / std::sqrt(float(D));"));
    CHECK_FALSE(has("Tensor4 g = xt::zeros<float>(D);"));  // a shape swapped for a size would not compile
    CHECK(has("return fmaxf(x, y) * scale + g(0, 0, 0, 0);"));
}

TEST_CASE("repair: a skip another loop over the same counter has is put back before a statement") {
    const Mutants m = generate_own_mutants(R"(namespace a {
void f(float* w, const bool* hidden, int n) {
    for (int j = 0; j < n; ++j) {
        if (hidden[j]) continue;
        w[j] = 1.0f;
    }
    float total = 0.0f;
    for (int j = 0; j < n; ++j) total += w[j];
}
}  // namespace a
)");
    const auto has = [&](const std::string& line) {
        return std::ranges::any_of(m.variants, [&](const Variant& v) { return v.edited_line == line; });
    };
    CHECK(has("for (int j = 0; j < n; ++j) if (hidden[j]) continue; total += w[j];"));
    CHECK_FALSE(has("if (hidden[j]) if (hidden[j]) continue; continue;"));  // never around a continue
}

TEST_CASE(
    "repair: a line is made like its twin, a range-for's copy made a reference, a mean, an offset, a tile's end") {
    const Mutants m = generate_own_mutants(R"(namespace a {
constexpr std::uint64_t kBytes = 4;
void dequantize(const Block& block, float d, float m, float* dst) {
    for (std::size_t j = 0; j < 16; ++j) {
        dst[j] = d * float(block.qs[j] & 15);
        dst[j + 16] = d * float(block.qs[j] >> 4) + m;
    }
}
void store(Cache& cache, const Proj& proj, std::size_t t, std::size_t start, std::size_t n_new) {
    for (std::size_t c = 0; c < 8; ++c) {
        cache.k(t, c) = proj.k(0, c);
        cache.v(t, c) = proj.k(0, c);
    }
    for (std::size_t n = 0; n < n_new; ++n) {
        rotate(cache.k, start + n);
        copy(cache.v, n);
    }
}
void normalise(std::vector<float>& row, float total) {
    for (auto w : row) w /= total;
}
float loss(const Tensor2& prob, Tensor2& grad, std::size_t counted) {
    double sum = 0;
    for (std::size_t i = 0; i < 4; ++i) grad(0, i) = float(prob(0, i) - 1.0);
    return float(sum / double(counted));
}
std::uint64_t bytes(std::uint64_t n) { return n * n; }
Tensor2 part_of(const Tensor2& w, std::size_t part, std::size_t d) {
    return xt::view(w, xt::range(part, part + d), xt::all());
}
double log_z(const std::vector<float>& row, float top) {
    double sum = 0.0;
    for (float x : row) sum += std::exp(double(x - top));
    return std::log(sum);
}
void append(Cache& cache, const Tensor3& x) {
    const auto t = cache.length;
    for (std::size_t c = 0; c < 4; ++c) cache.k(t, c) = x(0, 0, c);
}
void normalised(std::vector<float>& row, float top) {
    float sum = 0.0f;
    for (std::size_t j = 0; j < row.size(); ++j) row[j] = std::exp(row[j] - top);
    for (std::size_t j = 0; j < row.size(); ++j) row[j] /= sum;
}
bool divides(std::size_t heads, std::size_t width) { return heads == 0 && width % heads != 0; }
float slope(std::size_t h, std::size_t pow2, float x, float d) { return float(h / pow2) + x / d * 2.0f; }
float gelu(float z, float p, float g, float inner) { return 0.5f * z * std::erf(z / 2.0f) + p * g - inner; }
Tensor4 shaped(std::size_t B, std::size_t N, std::size_t H, std::size_t D) {
    for (std::size_t h = 1; h < H; ++h) use(h);
    return Tensor4::from_shape({B, N, H, D});
}
std::size_t length_after(RopeCache& cache, std::size_t fresh) {
    const std::size_t start = cache.length;
    cache.length += fresh;
    return cache.length;
}
void tiles(int stop, float* out) {
    constexpr int Bc = 4;
    for (int s = 0; s < stop; s += Bc) {
        const int rows = Bc;
        out[s] = float(rows);
    }
}
}  // namespace a
)");
    const auto edit = [&](const std::string& line) {
        const auto v = std::ranges::find(m.variants, line, &Variant::edited_line);
        return v == m.variants.end() ? std::string("none") : v->kind;
    };
    CHECK(edit("dst[j] = d * float(block.qs[j] & 15) + m;") == "made like its twin");  // the + m the twin has
    CHECK(std::ranges::none_of(m.variants, [](const Variant& v) {  // lines calling two functions are no twins
        return v.kind == "made like its twin" && v.line == 15;
    }));
    CHECK(edit("cache.v(t, c) = proj.v(0, c);") == "made like its twin");  // the twin, its k made v throughout
    CHECK(edit("copy(cache.v, start + n);") == "an offset put back");
    CHECK(edit("for (auto& w : row) w /= total;") == "a reference for a copy");
    CHECK(edit("for (std::size_t i = 0; i < 4; ++i) grad(0, i) = float(prob(0, i) - 1.0) / double(counted);") ==
          "a divisor put back");
    CHECK(edit("std::uint64_t bytes(std::uint64_t n) { return n * n * kBytes; }") == "an unused constant put back");
    CHECK(edit("const int rows = std::min(Bc, stop - s);") == "a tile cut at the end");
    CHECK(edit("return top + std::log(sum);") == "a shift added back");
    CHECK(edit("bool divides(std::size_t heads, std::size_t width) { return heads == 0 || width % heads != 0; }") ==
          "&& for ||");
    CHECK(edit("for (std::size_t j = 0; j < row.size(); ++j) row[j] = std::exp(row[j] - top); sum += row[j];") ==
          "a sum put back");  // `sum` read, never added to
    CHECK(edit("float gelu(float z, float p, float g, float inner) { return 0.5f * z * std::erf(z / std::sqrt(2.0f)) "
               "+ p * g - inner; }") == "a square root added");
    CHECK(edit("float gelu(float z, float p, float g, float inner) { return 0.5f * z * std::erf(z / 2.0f) + p * (g "
               "- inner); }") == "a difference multiplied whole");
    CHECK(edit("return Tensor4::from_shape({B, H, N, D});") == "a pair swapped");  // two sizes of a shape
    CHECK(edit("for (std::size_t h = 1; h < H; h += 2) use(h);") == "a step doubled");
    CHECK(std::ranges::none_of(m.variants, [](const Variant& v) {  // nor another name in the step: endless
        return v.original_line == "for (std::size_t h = 1; h < H; ++h) use(h);" && v.edited_line.starts_with("for (") &&
               v.edited_line.find("++h)") == std::string::npos && v.kind != "a step doubled";
    }));
    CHECK(edit("return start;") == "a saved value read");  // the count read after it is advanced
    CHECK(edit("float slope(std::size_t h, std::size_t pow2, float x, float d) { return float(double(h) / pow2) + "
               "x / d * 2.0f; }") == "an integer division made real");
    CHECK(edit("float slope(std::size_t h, std::size_t pow2, float x, float d) { return float(h / pow2) + x / (d * "
               "2.0f); }") == "a product divided whole");
    CHECK(edit("for (std::size_t c = 0; c < 4; ++c) cache.k(t, c) = x(0, 0, c); cache.length = t + 1;") ==
          "a count advanced");
    CHECK(edit("return xt::view(w, xt::range(part * d, (part + 1) * d), xt::all());") ==
          "a block's start for its index");
    // Evidence first: these edits pair with each other before the blind pair search's hundreds.
    const auto rank = [&](const std::string& line) {
        const auto v = std::ranges::find(m.variants, line, &Variant::edited_line);
        return v == m.variants.end() ? -9 : headwise::gradekit::evidence_rank(*v);
    };
    CHECK(rank("cache.v(t, c) = proj.v(0, c);") == 0);
    CHECK(rank("for (auto& w : row) w /= total;") == 0);
    CHECK(rank("copy(cache.v, n + 1);") == -1);  // an index + 1: no trace in the file
}

TEST_CASE("repair: a line made like its twin names only the variables in scope on its line") {
    // The scores' dot product and the values' sum are twins; the values' line names `w`, declared
    // in its own loop: made like it, the dot product's line would not compile.
    const std::string text =
        R"(float attend(const float* q, const float* k, const float* v, float* out, unsigned long n) {
    float s = 0.0f;
    for (unsigned long c = 0; c < n; ++c) s += q[c] * k[c];
    for (unsigned long c = 0; c < n; ++c) {
        const float w = s;
        out[c] += w * v[c];
    }
    return s;
}
)";
    const Mutants m = generate_own_mutants(text, {});
    const auto twin_edits = [&](int line) {
        std::vector<std::string> edited;
        for (const Variant& v : m.variants)
            if (v.kind == "made like its twin" && v.line == line) edited.push_back(v.edited_line);
        return edited;
    };
    CHECK(twin_edits(3).empty());  // `out[c] += w * k[c]` names `w` outside its loop
    const auto values_line = twin_edits(6);
    const bool dot_made_like_it = std::ranges::any_of(
        values_line, [](const std::string& e) { return e.find("s += q[c] * v[c]") != std::string::npos; });
    CHECK(dot_made_like_it);  // `s` is in scope there

    // A twin that reaches a member (`proj.k`) where this line's name is bare (`tokens`): no member put in.
    const std::string sizes = R"(unsigned long count(const Tensor3& tokens, const Projection& proj) {
    const unsigned long seen = tokens.shape()[1];
    const unsigned long heads = proj.k.shape()[1];
    return seen * heads;
}
)";
    for (const Variant& v : generate_own_mutants(sizes, {}).variants)
        if (v.kind == "made like its twin") CHECK(v.edited_line.find("tokens.k") == std::string::npos);
}

TEST_CASE("repair: a count's factor its twin has in front is put in front of this line's product") {
    // A multiply-add is two FLOPs: the scores' product lost the factor the values' line kept.
    const std::string text = R"(unsigned long flops(unsigned long d, unsigned long n) {
    const unsigned long projections = 4 * (2 * d * d);
    const unsigned long scores = n * d;
    const unsigned long mix = 2 * n * d;
    return projections + scores + mix;
}
)";
    std::vector<std::string> twin_edits;
    for (const Variant& v : generate_own_mutants(text, {}).variants)
        if (v.kind == "made like its twin" && v.line == 3) twin_edits.push_back(v.edited_line);
    CHECK(std::ranges::find(twin_edits, "const unsigned long scores = 2 * n * d;") != twin_edits.end());
}

TEST_CASE("repair: variables declared through a learner's type alias swap like the type's own") {
    // A bias has `out` numbers: `in` and `out` are both u64, the file's name for std::uint64_t.
    const std::string text = R"(namespace {
using u64 = std::uint64_t;
typedef std::size_t count_t;
u64 linear_params(u64 in, u64 out, bool bias) { return in * out + (bias ? in : 0); }
count_t rows(count_t batch, count_t heads) { return batch * batch; }
}  // namespace
)";
    const auto edited = [&](const std::string& to) {
        return std::ranges::any_of(generate_own_mutants(text, {}).variants,
                                   [&](const Variant& v) { return v.edited_line.find(to) != std::string::npos; });
    };
    CHECK(edited("(bias ? out : 0)"));
    CHECK(edited("return batch * heads;"));
}

TEST_CASE("repair: a comparison with a number in an unnamed lambda gets its other bound") {
    // The targets counted are those >= 0 (-1 is left out): `t > 0` leaves out token 0 too.
    const std::string text = R"(long counted(const std::vector<int>& targets) {
    return std::count_if(targets.begin(), targets.end(), [](int t) { return t > 0; });
}
)";
    const bool other_bound = std::ranges::any_of(generate_own_mutants(text, {}).variants, [](const Variant& v) {
        return v.edited_line.find("return t >= 0;") != std::string::npos;
    });
    CHECK(other_bound);
}

TEST_CASE("repair: a block's last statements are moved before its first statement that reads what they write") {
    const std::string file = R"(namespace x {
Tensor4 step(Cache& cache, const Tensor4& k_new) {
    const std::size_t pos = cache.length;
    const std::size_t n = cache.length;
    Tensor4 out = attend(cache, n);
    put(cache.k, k_new, pos);
    cache.length = pos + 1;
    return out;
}
}
)";
    const Mutants m = generate_own_mutants(file);
    // Not before line 3: `pos`, which they read, is declared there.
    CHECK(has_edit(m, 4, "statements moved earlier", "put(cache.k, k_new, pos); cache.length = pos + 1;"));
    CHECK(has_edit(m, 4, "statements moved earlier", "cache.length = pos + 1;"));
    const Variant* both = find(m, "statements moved earlier", 4);
    REQUIRE(both != nullptr);
    CHECK(both->moved_first == 6);
    CHECK(both->moved_last == 7);
    // One selector: both statements emptied where they were, put in front of line 4's value.
    const auto s = make_schemata(file, m, {both->id});
    const std::string id = std::to_string(both->id);
    const std::string emptied = "if (HW_M(" + id + ")) { ; } else";
    const std::size_t first = s.text.find(emptied);
    CHECK(first != std::string::npos);
    CHECK(s.text.find(emptied, first + 1) != std::string::npos);
    CHECK(s.text.find("HW_M(" + id + ") ? ((put(cache.k, k_new, pos), cache.length = pos + 1, (cache.length)))") !=
          std::string::npos);
}

TEST_CASE("repair: a declaration at the start of a block's last statements is moved with them, in a block") {
    const std::string file = R"(namespace x {
Tensor4 step(Cache& cache, const Tensor4& k_new) {
    const std::size_t n = cache.length;
    Tensor4 out = attend(cache, n);
    const std::size_t pos = cache.length;
    for (std::size_t c = 0; c < 4; ++c) cache.k(pos, c) = k_new(0, c);
    cache.length = pos + 1;
    return out;
}
}
)";
    const Mutants m = generate_own_mutants(file);
    const auto moved = std::ranges::find_if(m.variants, [](const Variant& v) {
        return v.kind == "statements moved earlier" && v.line == 3 && v.moved_first == 5 && v.moved_last == 7;
    });
    REQUIRE(moved != m.variants.end());
    // The declaration stays where it was too: the moved statements are a block of their own.
    CHECK(moved->replacement.starts_with("([&] { const std::size_t pos = cache.length;"));
}

TEST_CASE("repair: a loop at a block's end is moved before the loop that reads what it writes, run at once") {
    const std::string file = R"(namespace x {
float step(Cache& cache, const Tensor4& k_new, std::size_t n) {
    const std::size_t t = cache.length;
    float sum = 0.0f;
    for (std::size_t j = 0; j < cache.length; ++j) sum += cache.k(j);
    for (std::size_t c = 0; c < n; ++c) {
        cache.k(t) = k_new(c);
    }
    cache.length = t + 1;
    return sum;
}
}
)";
    const Mutants m = generate_own_mutants(file);
    const Variant* loop = find(m, "statements moved earlier", 5);
    REQUIRE(loop != nullptr);
    CHECK(loop->moved_first == 6);
    CHECK(loop->moved_last == 9);
    CHECK(loop->edited_line == "for (std::size_t c = 0; c < n; ++c) { cache.k(t) = k_new(c); } cache.length = t + 1;");
    // The loop's statement and the count emptied; both put in front of the reading loop's start,
    // which runs once: as a lambda called there.
    REQUIRE(loop->also.size() == 2);
    CHECK(loop->replacement ==
          "([&] { for (std::size_t c = 0; c < n; ++c) { cache.k(t) = k_new(c); } cache.length = t + 1; }(), (0))");
}

TEST_CASE("repair: two values of one declaration are swapped, and tiles of one type read for each other") {
    const std::string file = R"(namespace x {
void merge(const Tensor4& x) {
    const std::size_t B = x.shape()[0], N = x.shape()[3], dh = x.shape()[2];
    use(B, N, dh);
}
__global__ void kernel(const float* K, const float* V, float* O) {
    __shared__ tile<float, 32, D> k_tile;
    __shared__ tile<float, 32, D> v_tile;
    O[0] = k_tile(0, 0) * v_tile(0, 0);
}
}
)";
    const Mutants m = generate_own_mutants(file);
    CHECK(has_edit(m, 3, "two values swapped",
                   "const std::size_t B = x.shape()[0], N = x.shape()[2], dh = x.shape()[3];"));
    CHECK(has_edit(m, 9, "variable swap", "O[0] = v_tile(0, 0) * v_tile(0, 0);"));
    CHECK(has_edit(m, 9, "variable swap", "O[0] = k_tile(0, 0) * k_tile(0, 0);"));
    // Not a pointer for another: a kernel's inputs would make dozens of edits of every line.
    CHECK_FALSE(has_edit(m, 9, "variable swap", "K[0] = k_tile(0, 0) * v_tile(0, 0);"));
}

TEST_CASE("repair: the ninth trial's slips each have the edit that undoes them in a learner's own file") {
    const std::string file = R"(namespace x {
Tensor2 rows(const Tensor2& w, std::size_t from, std::size_t count) {
    return xt::view(w, xt::range(from, count), xt::all());
}
void mha(const Params& p, std::size_t dm) {
    use(block(p.w, 2 * dm, dm), block(p.b, dm, dm));
}
std::uint64_t flops(std::size_t d_model, std::size_t heads) {
    const std::uint64_t d = d_model;
    const std::uint64_t one_head = d * d;
    std::uint64_t total = one_head;
    return total + d;
}
void softmax(float* row, float* out, std::size_t n, const std::int32_t t) {
    float best = -1e30f;
    for (std::size_t j = 0; j < n; ++j) best = std::max(best, row[j]);
    float denom = 0.0f;
    for (std::size_t j = 0; j < n; ++j) {
        row[j] = std::exp(row[j]);
        denom += row[j];
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (best < 0.0f) {
            out[i] = 0.0f;
        }
        out[i] = row[i];
        if (i == n) out[i] -= 1.0f;
    }
    std::size_t p = 1;
    while (p < n) p *= 2;
}
}
)";
    const Mutants m = generate_own_mutants(file);
    CHECK(
        has_edit(m, 3, "a count for the range's end", "return xt::view(w, xt::range(from, from + count), xt::all());"));
    CHECK(has_edit(m, 6, "an argument like its neighbour's", "use(block(p.w, 2 * dm, dm), block(p.b, 2 * dm, dm));"));
    CHECK_FALSE(has_edit(m, 11, "a factor put back", "std::uint64_t total = one_head * one_head;"));
    CHECK(has_edit(m, 11, "a factor put back", "std::uint64_t total = d * one_head;"));
    // Not a parameter taken as it comes: `d = heads * d_model` makes up for slips elsewhere.
    CHECK_FALSE(has_edit(m, 9, "a factor put back", "const std::uint64_t d = heads * d_model;"));
    CHECK(has_edit(m, 12, "the result doubled", "return 2 * (total + d);"));
    CHECK(has_edit(m, 19, "a maximum subtracted", "row[j] = std::exp(row[j] - best);"));
    CHECK(has_edit(m, 26, "a softmax's sum put back", "out[i] = row[i] / denom;"));
    CHECK(has_edit(m, 27, "variable swap", "if (i == std::size_t(t)) out[i] -= 1.0f;"));
    CHECK(has_edit(m, 30, "a loop one step shorter", "while (p * 2 <= n) p *= 2;"));
    // The end of an if's block in a loop, which ends in no jump: a continue put back, said at the if.
    const Variant* jump = find(m, "a continue put back", 23);
    REQUIRE(jump != nullptr);
    CHECK(jump->original_line == "if (best < 0.0f) {");
    CHECK(jump->replacement == "continue;");
    CHECK(jump->begin == jump->end);
}

TEST_CASE("repair: the tenth trial's slips -- a math call's parenthesis moved, a comparison turned round") {
    const std::string file = R"(void layer(float* row, float* y, std::size_t n, bool causal, float var, float eps) {
    float top = row[0];
    for (std::size_t j = 0; j < n; ++j) y[j] = std::exp(row[j]) - top;
    const float inv = 1.0f / (std::sqrt(var) + eps);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            const bool hidden = causal && j < i;
            y[j] = hidden ? 0.0f : std::erf(row[j] / std::sqrt(2.0f)) * inv;
        }
    }
}
)";
    const Mutants m = generate_own_mutants(file);
    CHECK(has_edit(m, 3, "a call's parenthesis moved",
                   "for (std::size_t j = 0; j < n; ++j) y[j] = std::exp(row[j] - top);"));
    CHECK(has_edit(m, 4, "a call's parenthesis moved", "const float inv = 1.0f / (std::sqrt(var + eps));"));
    CHECK(has_edit(m, 8, "a call's parenthesis moved",
                   "y[j] = hidden ? 0.0f : std::erf(row[j]) / std::sqrt(2.0f) * inv;"));
    CHECK(has_edit(m, 7, "< for >", "const bool hidden = causal && j > i;"));
    // Not in a loop's condition: a loop that never runs says nothing.
    CHECK_FALSE(has_edit(m, 6, "< for >", "for (std::size_t j = 0; j > n; ++j) {"));
    // Of the names that set two parallel lines apart, one taken as the twin has it: the head index.
    const std::string heads =
        R"(void decode(const float* k_cache, const float* v_cache, std::size_t heads, std::size_t n) {
    for (std::size_t h = 0; h < heads; ++h) {
        const std::size_t g = h / 2;
        const float* keys = k_cache + g * n;
        const float* vals = v_cache + h * n;
        use(keys, vals);
    }
}
)";
    const Mutants twins = generate_own_mutants(heads);
    CHECK(has_edit(twins, 5, "a name like its twin's", "const float* vals = v_cache + g * n;"));
    // A flag nothing ever raises is raised after a statement before the line that reads it.
    const std::string flag = R"(void rows(const float* s, float* w, std::size_t n, std::size_t rows) {
    for (std::size_t i = 0; i < rows; ++i) {
        bool any = false;
        for (std::size_t j = 0; j < n; ++j) {
            if (s[j] < 0.0f) continue;
            w[j] = s[j];
        }
        if (!any) w[0] = 0.0f;
    }
}
)";
    const Mutants flags = generate_own_mutants(flag);
    CHECK(has_edit(flags, 6, "a flag raised", "w[j] = s[j]; any = true;"));
    CHECK_FALSE(has_edit(flags, 8, "a flag raised", "if (!any) w[0] = 0.0f; any = true;"));
    // Two neighbouring declarations' values swapped, both lines said.
    const std::string sizes = R"(void merge(const Tensor4& x) {
    const std::size_t heads = x.shape()[2];
    const std::size_t tokens = x.shape()[1];
    use(heads, tokens);
}
)";
    const Mutants both = generate_own_mutants(sizes);
    const Variant* swapped = find(both, "two values swapped", 2);
    REQUIRE(swapped != nullptr);
    CHECK(swapped->edited_line == "const std::size_t heads = x.shape()[1]; const std::size_t tokens = x.shape()[2];");
    CHECK(swapped->lines_last == 3);
}

TEST_CASE("repair: a nibble's mask is tried as the other nibble's, its suffix kept") {
    const std::string text = R"(void low(const unsigned char* qs, float d, float m, float* dst) {
    for (int j = 0; j < 16; ++j) dst[j] = d * float(qs[j] & 0xF0u) + m;
}
)";
    const bool other_mask = std::ranges::any_of(generate_own_mutants(text, {}).variants, [](const Variant& v) {
        return v.kind == "the other nibble's mask" && v.edited_line.find("qs[j] & 0x0Fu") != std::string::npos;
    });
    CHECK(other_mask);
}

TEST_CASE("repair: a value never read takes the place of a product of names where it belongs") {
    // The mean is over the targets counted, not over B * N: `counted` made and never read.
    const std::string text =
        R"(double mean(const std::vector<int>& targets, std::size_t B, std::size_t N, double total) {
    const auto counted = std::count_if(targets.begin(), targets.end(), [](int t) { return t >= 0; });
    const double inv_count = 1.0 / double(B * N);
    return total * inv_count;
}
)";
    const bool in_place = std::ranges::any_of(generate_own_mutants(text, {}).variants, [](const Variant& v) {
        return v.kind == "an unused value in place of a product" &&
               v.edited_line == "const double inv_count = 1.0 / double(counted);";
    });
    CHECK(in_place);
}

TEST_CASE("repair: a line that adds into what the file never sets is named, one it zeroes or fills is not") {
    const std::string file = R"(void attend(const float* w, const float* v, float* out, std::size_t n, std::size_t d) {
    float* oh = out + d;
    for (std::size_t j = 0; j < n; ++j)
        for (std::size_t c = 0; c < d; ++c) oh[c] += w[j] * v[j * d + c];
}
void summed(Tensor2& acc, Tensor2& grad, std::vector<float>& col, const Tensor2& x) {
    acc.fill(0.0f);
    for (std::size_t i = 0; i < 4; ++i) acc(0, i) += x(0, i);
    for (std::size_t i = 0; i < 4; ++i) grad(0, i) = 0.0f;
    for (std::size_t i = 0; i < 4; ++i) grad(0, i) += x(0, i);
    std::vector<float> sums(4);
    for (std::size_t i = 0; i < 4; ++i) sums[i] += x(0, i);
}
void elsewhere(float* oh) {  // another function's `oh`, set: not the one attend never sets
    for (std::size_t c = 0; c < 4; ++c) oh[c] = 0.0f;
}
Tensor2 context(const Tensor2& x) {
    Tensor2 ctx = Tensor2::from_shape({1, 4});
    for (std::size_t i = 0; i < 4; ++i) ctx(0, i) += x(0, i);
    return ctx;
}
)";
    const auto variants = generate_own_mutants(file).variants;
    const auto lines = headwise::gradekit::never_cleared(file, variants);
    REQUIRE(lines.size() == 2);
    CHECK(lines.front() ==
          "your line 4 (`for (std::size_t c = 0; c < d; ++c) oh[c] += w[j] * v[j * d + c];`, in attend, the loop over "
          "c) adds to `oh`");
    // Made with from_shape in its function: unset whatever the checks say, and said so.
    const auto made = headwise::gradekit::never_cleared(file, variants, true);
    REQUIRE(made.size() == 1);
    CHECK(made.front() ==
          "your line 19 (`for (std::size_t i = 0; i < 4; ++i) ctx(0, i) += x(0, i);`, in context, "
          "the loop over i) adds to `ctx`, made with from_shape on your line 18");
}

TEST_CASE("repair: a tensor made with from_shape and never filled is named by the line that makes it") {
    const std::string file = R"(void masked(const Tensor4& scores, Tensor4& weights) {
    weights = Tensor4::from_shape(scores.shape());
    for (std::size_t j = 0; j < 4; ++j) {
        if (j > 2) continue;
        weights(0, 0, 0, j) = scores(0, 0, 0, j);
    }
}
void filled(Tensor4& out) {
    out = Tensor4::from_shape({1, 1, 1, 4});
    out.fill(0.0f);
}
)";
    const auto variants = generate_own_mutants(file).variants;
    const auto weights = headwise::gradekit::never_filled(file, "weights", variants);
    REQUIRE(weights.has_value());
    CHECK(*weights ==
          "your line 2 (`weights = Tensor4::from_shape(scores.shape());`, in masked) makes `weights` "
          "without filling it");
    CHECK_FALSE(headwise::gradekit::never_filled(file, "out", variants).has_value());     // filled after
    CHECK_FALSE(headwise::gradekit::never_filled(file, "scores", variants).has_value());  // never made here
}

TEST_CASE("repair: a file that keeps state between calls has its edits graded each in a fresh child") {
    using headwise::gradekit::holds_mutable_statics;
    // State kept between calls: the next edit's run would start from what the last one left.
    CHECK(
        holds_mutable_statics("float* scratch() {\n    static std::vector<float> buf(64);\n    return buf.data();\n}"));
    CHECK(holds_mutable_statics("int count() { static int calls = 0; return ++calls; }"));
    CHECK(holds_mutable_statics("thread_local std::array<float, 8> lanes{};"));
    CHECK(holds_mutable_statics("static float cache[16];"));
    CHECK(holds_mutable_statics("__global__ void k() {\n    extern __shared__ float dynamic[];\n}"));
    // A kernel's __shared__ arrays are zeroed between edits instead (with_shared_kept).
    CHECK_FALSE(holds_mutable_statics("__global__ void k() {\n    __shared__ shared_tile<float, 16, 16> tile;\n}"));
    // Nothing kept: constants, functions, casts and assertions.
    CHECK_FALSE(holds_mutable_statics("static const float kScale = 0.5f;\nstatic constexpr int kLanes = 32;"));
    CHECK_FALSE(
        holds_mutable_statics("static float dot(const float* a, const float* b, std::size_t n) {\n    return 0.0f;\n}\n"
                              "static void fill(std::vector<float>& v) { v.assign(4, 0.0f); }"));
    CHECK_FALSE(holds_mutable_statics("const auto n = static_cast<float>(d);\nstatic_assert(sizeof(float) == 4);"));
    CHECK_FALSE(
        holds_mutable_statics("namespace {\nstatic std::size_t index(std::size_t b, std::size_t i,\n"
                              "                         std::size_t n) {\n    return b * n + i;\n}\n}"));
}

TEST_CASE("repair: statements are not moved above the declaration just before them that they read") {
    const std::string file = R"(namespace x {
void softmax(Tensor2& result, const Tensor2& scores, std::size_t rows, std::size_t cols) {
    for (std::size_t r = 0; r < rows; ++r) {
        float biggest = scores(r, 0);
        for (std::size_t c = 1; c < cols; ++c) biggest = std::max(biggest, scores(r, c));
        float total = 0.0f;
        for (std::size_t c = 0; c < cols; ++c) {
            result(r, c) = std::exp(scores(r, c) - biggest);
            total += result(r, c);
        }
        for (std::size_t c = 0; c < cols; ++c) result(r, c) /= total;
    }
}
}
)";
    // `total` is in scope from line 7 on: the loops that add to it and divide by it stay below it
    // (line 5 reads the row `r` they pass to `result`, but `total` is not declared there yet).
    const Mutants m = generate_own_mutants(file);
    CHECK_FALSE(std::ranges::any_of(m.variants, [](const Variant& v) {
        return v.kind == "statements moved earlier" && v.moved_first == 7 && v.line < 7;
    }));
}

TEST_CASE("repair: statements that jump (continue, break) are not moved") {
    const std::string file = R"(namespace x {
void rows(Tensor2& out, const std::vector<char>& seen, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        float top = out(i, 0);
        out(i, 1) = top;
        if (!seen[i]) {
            for (std::size_t c = 0; c < n; ++c) out(i, c) = 0.0f;
            continue;
        }
    }
}
}
)";
    const Mutants m = generate_own_mutants(file);
    CHECK_FALSE(std::ranges::any_of(m.variants, [](const Variant& v) {
        return v.kind == "statements moved earlier" && v.replacement.find("continue") != std::string::npos;
    }));
}

TEST_CASE("repair: no edit of a learner's line leaves a bracket unclosed or adds an assignment") {
    const std::string file = R"(namespace x {
std::uint64_t flops(std::uint64_t d, std::uint64_t n) {
    const std::uint64_t projections = 4 * 2 * d * d;
    const std::uint64_t mixing = 2 * (2 * n * d);
    return projections + mixing;
}
void grads(Tensor2& dv, const Tensor2& d_out, const Tensor2& v, const float* P, std::size_t i, std::size_t j) {
    float d = 0.0f;
    for (std::size_t c = 0; c < 8; ++c) {
        dv(j, c) += P[j] * d_out(i, c);
        d += d_out(i, c) * v(j, c);
    }
    use(d);
}
}
)";
    // The twins `4 * 2 * d * d` and `2 * (2 * n * d)` differ by a parenthesis: taken one at a time,
    // `4 * (2 * d * d` did not parse; the twin `+=` put in made `d += d_out(i, c) += ...`.
    const auto balanced = [](const std::string& line) {
        return std::ranges::count(line, '(') == std::ranges::count(line, ')');
    };
    // Two of `=`, `+=` in one line (the file's lines have one each).
    const auto assignments = [](const std::string& line) {
        return line.find("+=") != line.rfind("+=") ||
               (line.find("+=") != std::string::npos && line.find(" = ") != std::string::npos);
    };
    const Mutants m = generate_own_mutants(file);
    for (const Variant& v : m.variants) {
        INFO(v.kind << ": " << v.edited_line);
        CHECK(balanced(v.edited_line));
        if (v.line == 10 || v.line == 11) CHECK_FALSE(assignments(v.edited_line));
    }
}

TEST_CASE("repair: a twin's name that stands for two of the line's names is not put in for either") {
    const std::string file = R"(namespace x {
void store(Cache& cache, const Tensor2& k_rot, const Tensor2& v, std::size_t t) {
    for (std::size_t c = 0; c < 8; ++c) {
        cache.k(t, c) = k_rot(t, c);
        cache.v(t, c) = v(t, c);
    }
}
}
)";
    // `v` is the member `k` and the name `k_rot` of line 4: `cache.k_rot(t, c)` names no member.
    const Mutants m = generate_own_mutants(file, {{"Cache", {{"k", "Tensor2"}, {"v", "Tensor2"}}}});
    CHECK_FALSE(std::ranges::any_of(
        m.variants, [](const Variant& v) { return v.edited_line.find("cache.k_rot") != std::string::npos; }));
}

TEST_CASE(
    "repair: edits that do not type-check are not made: a vector<bool>'s +=, a void call's term, "
    "a pointer's offset, a tensor's member") {
    const std::string file = R"(namespace x {
void mask(std::vector<bool>& hidden, const Mask2& m, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j) {
        hidden[j] = m(0, j) || m(1, j);
    }
}
__global__ void kernel(const float* q, float* o, int n) {
    const int my_end = n - 1;
    o[0] = q[0];
    __syncthreads();
    o[1] = q[1];
}
void dequantize(const BlockQ4_1* blocks, std::size_t count, float* out) {
    for (std::size_t blk = 0; blk < count; ++blk) {
        const BlockQ4_1& block = blocks[blk];
        float* dst = out + blk * 32;
        dst[0] = block.d;
    }
}
Tensor2 linear(const Tensor2& w, const Tensor2& x) {
    Tensor2 y = x;
    y(0, 0) = x(0, 0);
    return y;
}
float norm(const Weights& w, float x) { return x * w.gamma; }
}
)";
    const Mutants m = generate_own_mutants(
        file, {{"Weights", {{"gamma", "float"}, {"eps", "float"}}}, {"BlockQ4_1", {{"d", "float"}}}});
    for (const Variant& v : m.variants) {
        INFO(v.kind << ": " << v.edited_line);
        CHECK(v.edited_line.find("hidden[j] +=") == std::string::npos);             // a proxy reference: no +=
        CHECK(v.edited_line.find("__syncthreads() +") == std::string::npos);        // void
        CHECK(v.edited_line.find("blocks[out + blk]") == std::string::npos);        // a float* is no row count
        if (v.line == 22) CHECK(v.edited_line.find("w.eps") == std::string::npos);  // linear's w is a Tensor2
    }
}

TEST_CASE(
    "repair: a class's initializer is converted to the class in each schemata alternative; no count is "
    "added to a type's braced value or a tensor's whole initializer") {
    const std::string file = R"(namespace x {
Tensor3 layer(const Tensor3& x, const Tensor3& attended, std::size_t B, std::size_t H, std::size_t dh) {
    const std::size_t heads = H;
    const std::uint64_t bytes = std::uint64_t{4} * B;
    Tensor4 out = Tensor4::from_shape({B, H, 1, dh});
    const Tensor3 h = x + attended;
    const Tensor3& same = h;
    unsigned long count = B * H;
    return h + same;
}
}
)";
    const Mutants m = generate_own_mutants(file);
    for (const Variant& v : m.variants) {
        INFO(v.kind << ": " << v.edited_line);
        CHECK(v.edited_line.find("std::uint64_t + heads") == std::string::npos);
        CHECK(v.edited_line.find("}) + heads") == std::string::npos);
    }
    std::vector<int> all;
    for (const Variant& v : m.variants) all.push_back(v.id);
    const auto s = make_schemata(file, m, all);
    // `x + attended` and `x - attended` are two expression templates: both made a Tensor3.
    CHECK(s.text.find("? Tensor3(x - attended) :") != std::string::npos);
    CHECK(s.text.find(":\nTensor3(x + attended))") != std::string::npos);  // the learner's own, last
    // A reference binds to the alternative itself; a built-in number needs no conversion.
    CHECK(s.text.find("Tensor3(h)") == std::string::npos);
    CHECK(s.text.find("unsigned long(") == std::string::npos);
    CHECK(s.text.find("long(B") == std::string::npos);
}

TEST_CASE("repair: a file that writes through raw pointers is told from one that indexes checked containers") {
    using headwise::gradekit::writes_raw_memory;
    CHECK(writes_raw_memory("float* row = out.data() + i * d;"));
    CHECK(writes_raw_memory("std::memcpy(dst, src, n * sizeof(float));"));
    CHECK(writes_raw_memory("std::copy(a.begin(), a.end(), b.begin());"));
    CHECK(writes_raw_memory("const float *q = &x(b, i, 0);"));
    CHECK(writes_raw_memory("std::uint8_t* bytes = buffer;"));
    // xtensor expressions and indexing, references, products of names, logical and.
    CHECK_FALSE(
        writes_raw_memory("const Tensor3 h = x + attended;\nconst Tensor3& same = h;\nout(b, i, j) = double(B * N);\n"
                          "if (a && b(0)) return;\nauto f = [&](std::size_t i) { return x(i); };"));
}

TEST_CASE("repair: each __shared__ array a kernel declares is noted in the schemata, to be zeroed between edits") {
    using headwise::gradekit::with_shared_kept;
    const std::string kernel = R"(// __shared__ memory, staged a tile at a time
template <int D>
__global__ void tiled(global_ptr<const float> k) {
    __shared__ shared_tile<float, 16, D> k_tile;  // (16, D)
    __shared__ float m[64], l[64];
    k_tile(0, 0) = k[0];
}
)";
    const auto kept = with_shared_kept(kernel);
    REQUIRE(kept);
    // The lines stay where they were (the schemata's line map), comments are not read.
    CHECK(std::ranges::count(*kept, '\n') == std::ranges::count(kernel, '\n'));
    CHECK(kept->find("// __shared__ memory, staged a tile at a time\n") == 0);
    CHECK(kept->find("__shared__ shared_tile<float, 16, D> k_tile; "
                     "hw_keep_shared(__builtin_addressof(k_tile), sizeof(k_tile));  // (16, D)") != std::string::npos);
    CHECK(kept->find("__shared__ float m[64], l[64]; hw_keep_shared(__builtin_addressof(m), sizeof(m)); "
                     "hw_keep_shared(__builtin_addressof(l), sizeof(l));") != std::string::npos);
    // What the reader cannot place: each edit gets a child of its own.
    CHECK_FALSE(with_shared_kept("extern __shared__ float dynamic[];"));
    CHECK_FALSE(with_shared_kept("#define TILE __shared__ float t[16]\nvoid f() { TILE; }"));
    CHECK(with_shared_kept("float no_kernels = 0;") == "float no_kernels = 0;");
}

TEST_CASE("repair: a guarded schemata tests each region once, the learner's own text last where it was") {
    const std::string file = R"(namespace x {
float f(const float* a, std::size_t n) {
    float sum = 0.0f;
    for (std::size_t i = 0; i < n; ++i)
        sum += a[i] *
               a[i];
    return sum;
}
}
)";
    const Mutants m = generate_own_mutants(file);
    std::vector<int> all;
    for (const Variant& v : m.variants) all.push_back(v.id);
    const auto plain = make_schemata(file, m, all);
    const auto guarded = make_schemata(file, m, all, true);
    CHECK(plain.text.find("HW_R(") == std::string::npos);
    // The statement's own text first, as written (its two lines), while no edit of its region is on;
    // its alternatives after it, then its text again on one line.
    CHECK(guarded.text.find("if (!HW_R(") != std::string::npos);
    CHECK(guarded.text.find(")) { sum += a[i] *\n               a[i]; } else\nif (HW_M(") != std::string::npos);
    CHECK(guarded.text.find("{ sum += a[i] *                a[i]; }") != std::string::npos);
    // An expression's the same way, one flat chain: `(!HW_R(r) ? (own) : HW_M(a) ? (...) : (own))`.
    CHECK(guarded.text.find("(!HW_R(") != std::string::npos);
    // Every alternative keeps a line of its own, and the learner's lines stay at their numbers.
    CHECK(guarded.line_to_variant.size() == plain.line_to_variant.size());
    const int last = plain.line_to_source.rbegin()->first;
    CHECK(guarded.line_to_source.rbegin()->second == plain.line_to_source.at(last));
}
