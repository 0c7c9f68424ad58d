// Grader for the throw-away exercise 99: a hand-worked case.
#include "99_throwaway.hpp"
#include "grade.hpp"

using namespace headwise;
using grade::Ex99;

TEST_CASE("triple: hand-worked (1, 2, 2)", "[ex99]") {
    const Tensor3 x = {{{1, -2}, {0.5f, 4}}};   // (1, 2, 2)
    const Tensor3 expected = {{{3, -6}, {1.5f, 12}}};  // (1, 2, 2)
    grade::expect<Ex99>(
        "triple(x (1, 2, 2))", [&](const Ex99& ex) { return ex.triple(x); }, expected, "B, N, d_model",
        grade::Tolerance{0.0, 0.0});
}
