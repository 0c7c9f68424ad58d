// tests/transplant_test.cpp -- gradekit/transplant.hpp: where a learner's lines differ from the
// solution's, and what a copy with one difference put back reads.
#include "gradekit/transplant.hpp"

#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

using headwise::gradekit::differing_hunks;
using headwise::gradekit::Hunk;
using headwise::gradekit::with_hunk_replaced;

TEST_CASE("transplant: formatting and // comments are not differences") {
    const std::vector<std::string> solution = {"int f(int a) {", "    return a + 1;  // one more", "}"};
    const std::vector<std::string> learner = {"int f(int a) {", "", "  return a+1;", "}  // done"};
    CHECK(differing_hunks(learner, solution).empty());
}

TEST_CASE("transplant: a changed line is one hunk, numbered as the learner's file is") {
    const std::vector<std::string> solution = {"a();", "b();", "c();"};
    const std::vector<std::string> learner = {"// mine", "a();", "B();", "c();"};
    const auto hunks = differing_hunks(learner, solution);
    REQUIRE(hunks.size() == 1);
    CHECK(hunks[0].learner_first == 3);
    CHECK(hunks[0].learner_last == 3);
    CHECK(hunks[0].solution_text == std::vector<std::string>{"b();"});
    CHECK(with_hunk_replaced(learner, hunks[0]) == std::vector<std::string>{"// mine", "a();", "b();", "c();"});
}

TEST_CASE("transplant: a line the learner left out is an empty range after their previous line") {
    const std::vector<std::string> solution = {"a();", "b();", "c();"};
    const std::vector<std::string> learner = {"a();", "c();"};
    const auto hunks = differing_hunks(learner, solution);
    REQUIRE(hunks.size() == 1);
    CHECK(hunks[0].learner_first == 2);
    CHECK(hunks[0].learner_last == 1);  // empty: after line 1
    CHECK(with_hunk_replaced(learner, hunks[0]) == solution);
}

TEST_CASE("transplant: a moved statement is two hunks, each put back alone") {
    const std::vector<std::string> solution = {"x = f();", "y = g(x);", "m = n;", "}"};
    const std::vector<std::string> learner = {"x = f();", "m = n;", "y = g(x);", "}"};
    const auto hunks = differing_hunks(learner, solution);
    REQUIRE(hunks.size() == 2);
    // Each hunk alone gives back a file with the statement twice or not at all.
    CHECK(with_hunk_replaced(learner, hunks[0]) != solution);
    CHECK(with_hunk_replaced(learner, hunks[1]) != solution);
    // Both, the later first: the solution.
    CHECK(with_hunk_replaced(with_hunk_replaced(learner, hunks[1]), hunks[0]) == solution);
}

TEST_CASE("transplant: a // inside a string literal is not a comment") {
    const std::vector<std::string> solution = {R"(url = "http://a";)"};
    const std::vector<std::string> learner = {R"(url = "http://b";)"};
    CHECK(differing_hunks(learner, solution).size() == 1);
}

TEST_CASE("transplant: a solution line is found where it stands in the learner's file") {
    const std::vector<std::string> solution = {"a();", "b();", "c();", "d();"};
    const std::vector<std::string> learner = {"// two lines of mine", "", "a();", "B();", "c();", "d();"};
    CHECK(headwise::gradekit::learner_line_of(1, learner, solution) == 3);  // the same line, moved down
    CHECK(headwise::gradekit::learner_line_of(2, learner, solution) == 4);  // a changed line: its hunk
    CHECK(headwise::gradekit::learner_line_of(4, learner, solution) == 6);
    // The solution's words for the place ("in f") only where the learner's file bears them out.
    CHECK(headwise::gradekit::in_learner_lines("with `x` in place of `c();` (line 3, in f); and (line 4, in f)",
                                               learner,
                                               solution) == "with `x` in place of `c();` (line 5); and (line 6)");
}

TEST_CASE(
    "transplant: the search's place is said in the learner's words, or as the solution's line where theirs has none") {
    const std::vector<std::string> solution = {"float layer_norm(float x) {", "    for (int i = 0; i < 4; ++i) x += i;",
                                               "    return x;", "}"};
    const std::vector<std::string> learner = {"float add_norm(float x) {", "    for (int c = 0; c < 4; ++c) x += c;",
                                              "    return x;", "}"};
    // Their line 3 stands for the solution's: its function and loop are not theirs.
    CHECK(headwise::gradekit::in_learner_lines("with `x` (line 3, in layer_norm, the loop over i)", learner,
                                               solution) == "with `x` (line 3)");
    const std::vector<std::string> same_names = {"float layer_norm(float x) {",
                                                 "    for (int i = 0; i < 4; ++i) x += i;", "    return x;", "}"};
    CHECK(headwise::gradekit::in_learner_lines("with `x` (line 3, in layer_norm, the loop over i)", same_names,
                                               solution) == "with `x` (line 3, in layer_norm, the loop over i)");
}

TEST_CASE("transplant: a solution line the learner rewrote as several lines is named as all of them") {
    const std::vector<std::string> solution = {"int f() {", "    int t = 0;", "    t = g();", "    return t;", "}"};
    const std::vector<std::string> learner = {"int f() {",   "    int t = 0;", "    t = h();",
                                              "    t += 1;", "    return t;",  "}"};
    CHECK(headwise::gradekit::in_learner_lines("with `x` in place of `t = g();` (line 3, in f)", learner, solution) ==
          "with `x` in place of `t = g();` (your lines 3-4, in f)");
}

// The solution both helper tests rewrite: a sum, its loop on line 3.
const std::vector<std::string> sum_solution = {"int f(int n) {", "    int s = 0;",
                                               "    for (int i = 0; i < n; ++i) s += i;", "    return s;", "}"};

// Where a learner's rewrite of sum_solution puts the search's edit of its line 3.
std::string edit_of_line_3(const std::vector<std::string>& learner) {
    return headwise::gradekit::in_learner_lines("with `x` in place of `s += i` (line 3, in f)", learner, sum_solution);
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST_CASE("transplant: a rewritten line that calls a helper of the learner's own names the helper's lines too") {
    const std::vector<std::string> learner = {"int f(int n) {",        "    auto term = [&](int i) {",
                                              "        return i + 1;", "    };",
                                              "    int s = 0;",        "    for (int i = 0; i < n; ++i) s += term(i);",
                                              "    return s;",         "}"};
    CHECK(edit_of_line_3(learner) ==
          "with `x` in place of `s += i` (your line 6 and `term` (your lines 2-4), which it calls, in f)");
}

TEST_CASE("transplant: a helper passed by name, defined on one line, is named beside the one called") {
    const std::vector<std::string> learner = {"int twice(int i) { return 2 * i; }",
                                              "int f(int n) {",
                                              "    auto term = [&](int i) {",
                                              "        return i + 1;",
                                              "    };",
                                              "    int s = 0;",
                                              "    for (int i = 0; i < n; ++i) s += apply(term(i), twice);",
                                              "    return s;",
                                              "}"};
    CHECK(edit_of_line_3(learner) ==
          "with `x` in place of `s += i` (your line 7 and `term` (your lines 3-5) or "
          "`twice` (your line 1), which it calls, in f)");
}

TEST_CASE("transplant: a keyword or a comment's words are never named as the learner's helper") {
    const std::vector<std::string> learner = lines_of(R"(int f(int n) {
    // the sum for (0, n), as the loop made it
    int s = 0;
    for (int i = 0; i < n; ++i) {
        s += 2 * i;
    }
    return s;
})");
    CHECK(edit_of_line_3(learner) == "with `x` in place of `s += i` (your lines 4-6, in f)");
}

TEST_CASE("transplant: a closing brace the learner added is the one left over, by its indentation") {
    const std::vector<std::string> solution = lines_of(R"(void f(int n) {
    for (int b = 0; b < n; ++b) {
        for (int j = 0; j < n; ++j)
            g(j);
        h(b);
    }
})");
    const std::vector<std::string> learner = lines_of(R"(void f(int n) {
    for (int b = 0; b < n; ++b) {
        for (int j = 0; j < n; ++j) {
            g(j);
            h(b);
        }
    }
})");
    const std::vector<Hunk> hunks = differing_hunks(learner, solution);
    REQUIRE(hunks.size() == 2);
    CHECK(hunks[0].learner_first == 3);
    CHECK(hunks[0].solution_first == 3);
    CHECK(hunks[1].learner_first == 6);  // the brace after h(b), not the function's
    CHECK(hunks[1].learner_last == 6);
    CHECK(hunks[1].solution_text.empty());
}
