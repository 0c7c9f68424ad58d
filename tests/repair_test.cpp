// tests/repair_test.cpp -- gradekit/repair.hpp's edits: the single-edit variants of a learner's own
// file (gradekit/mutants.hpp's generate_own_mutants), made where their code is, named by their
// functions, lambdas and lines, and each on a line of its own in the schemata.
#include "gradekit/mutants.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using headwise::gradekit::generate_own_mutants;
using headwise::gradekit::make_schemata;
using headwise::gradekit::Mutants;
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
    CHECK(schemata.line_to_variant.size() == m.variants.size());
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
