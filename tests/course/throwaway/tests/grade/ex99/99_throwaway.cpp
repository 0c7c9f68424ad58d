// Grader for the throw-away exercise 99: hand-worked cases, one of them large enough (every axis
// >= 2, one >= 4, not all equal) for a catalogued mistake to be named (tests/grade/grade.hpp).
#include "99_throwaway.hpp"
#include "grade.hpp"

using namespace headwise;
using grade::Ex99;

TEST_CASE("triple: hand-worked (1, 2, 2)", "[ex99]") {
    const Tensor3 x = {{{1, -2}, {0.5f, 4}}};   // (1, 2, 2)
    const Tensor3 expected = {{{3, -6}, {1.5f, 12}}};  // (1, 2, 2)
    grade::expect<Ex99>({.what = "triple(x (1, 2, 2))", .dims = "B, N, d_model", .tol = grade::Tolerance{0.0, 0.0}},
                        [&](const Ex99& ex) { return ex.triple(x); }, expected);
}

TEST_CASE("triple: hand-worked (2, 4, 3)", "[ex99]") {
    const Tensor3 x = {{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}},
                       {{-1, -2, -3}, {0, 1, 0}, {2, 2, 2}, {3, 0, -3}}};  // (2, 4, 3)
    const Tensor3 expected = {{{3, 6, 9}, {12, 15, 18}, {21, 24, 27}, {30, 33, 36}},
                              {{-3, -6, -9}, {0, 3, 0}, {6, 6, 6}, {9, 0, -9}}};  // (2, 4, 3)
    grade::expect<Ex99>({.what = "triple(x (2, 4, 3))", .dims = "B, N, d_model", .tol = grade::Tolerance{0.0, 0.0}},
                        [&](const Ex99& ex) { return ex.triple(x); }, expected);
}
