// tests/grade/grade.hpp -- what every grader (tests/grade/NN_topic.cpp) is written with.
//
// The subject under grade and the catalogue of known mistakes come from registry.hpp.
//
// A check runs one call on the subject and compares the result with an independent oracle:
// the shape first, then every value. When they disagree, the same call is run on every
// catalogued mistake; a mistake that is wrong on this case *and* produces what the subject
// produced is named in the failure, with its two-line explanation.
#pragma once

#include "registry.hpp"

#include "headwise/tensor.hpp"
#include "headwise/trace.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace headwise::grade {

// Two results agree when every element satisfies |actual - expected| <= abs + rel * |expected|,
// NaN matching only NaN and inf only the same inf. The default suits float code checked
// against a double-precision oracle on inputs of order 1.
struct Tolerance {
    double abs = 1e-4;
    double rel = 1e-4;
};

// ---------------------------------------------------------------------------------------------
// Comparing results. `dims` names the expected result's dimensions ("B, H, N, d_head").

struct Outcome {
    bool same = true;
    std::string detail;  // one line, empty when same: where and how they differ, shape first
};

Outcome compare_values(std::span<const std::size_t> actual_shape, std::span<const float> actual,
                       std::span<const std::size_t> expected_shape, std::span<const float> expected,
                       std::string_view dims, Tolerance tol);
Outcome compare_flags(std::span<const std::size_t> actual_shape, const std::vector<bool>& actual,
                      std::span<const std::size_t> expected_shape, const std::vector<bool>& expected,
                      std::string_view dims);

template <std::size_t R>
Outcome compare(const Tensor<R>& actual, const Tensor<R>& expected, std::string_view dims, Tolerance tol) {
    const std::vector<std::size_t> sa(actual.shape().begin(), actual.shape().end());
    const std::vector<std::size_t> se(expected.shape().begin(), expected.shape().end());
    return compare_values(sa, {actual.data(), actual.size()}, se, {expected.data(), expected.size()}, dims, tol);
}

inline Outcome compare(const Mask2& actual, const Mask2& expected, std::string_view dims, Tolerance) {
    const std::vector<std::size_t> sa(actual.shape().begin(), actual.shape().end());
    const std::vector<std::size_t> se(expected.shape().begin(), expected.shape().end());
    return compare_flags(sa, std::vector<bool>(actual.begin(), actual.end()), se,
                         std::vector<bool>(expected.begin(), expected.end()), dims);
}

Outcome compare(std::size_t actual, std::size_t expected, std::string_view what, Tolerance);

// ---------------------------------------------------------------------------------------------
// Failing with a diagnosis.

// Records what the report (tests/grade/report.cpp) shows for the failure that follows, then
// fails the current test case with `message` and the mistake's name and explanation, if any.
[[noreturn]] void fail(const std::string& message, const std::string* mistake, const std::string* explanation);

// The first catalogued mistake that is wrong on this case and reproduces `actual`, or null.
template <class Api, class Call, class Result>
const Mistake<Api>* diagnose(const Call& call, const Result& actual, const Result& expected, std::string_view dims,
                             Tolerance tol) {
    for (const Mistake<Api>& m : catalogue<Api>()) {
        try {
            const Result theirs = call(m.api);
            if (compare(theirs, expected, dims, tol).same) continue;  // harmless on this case
            if (compare(actual, theirs, dims, tol).same) return &m;
        } catch (const std::exception&) {
            // this mistake cannot run this case (e.g. it produces a shape it then rejects)
        }
    }
    return nullptr;
}

// Runs `call` on the subject and checks its result against `expected`. `what` says which call
// on which input, e.g. "split_heads(x (2, 5, 64), heads = 8)". Exceptions from the subject
// propagate, so a stub fails with its "not implemented yet" message.
template <class Api, class Call, class Result>
void expect(const std::string& what, const Call& call, const Result& expected, std::string_view dims,
            Tolerance tol = {}) {
    const Result actual = call(subject<Api>());
    const Outcome o = compare(actual, expected, dims, tol);
    if (o.same) {
        SUCCEED(what);
        return;
    }
    const Mistake<Api>* m = diagnose<Api>(call, actual, expected, dims, tol);
    fail(what + ": " + o.detail, m ? &m->name : nullptr, m ? &m->explanation : nullptr);
}

// Runs `call` on the subject and requires it to refuse with headwise::usage_error (bad input).
template <class Api, class Call>
void expect_usage_error(const std::string& what, const Call& call) {
    try {
        call(subject<Api>());
    } catch (const usage_error&) {
        SUCCEED(what);
        return;
    } catch (const std::logic_error& e) {
        if (std::string_view(e.what()).starts_with("not implemented yet")) throw;
        fail(what + ": should throw headwise::usage_error, threw \"" + e.what() + "\"", nullptr, nullptr);
    } catch (const std::exception& e) {
        fail(what + ": should throw headwise::usage_error, threw \"" + e.what() + "\"", nullptr, nullptr);
    }
    fail(what + ": should throw headwise::usage_error (bad input), but returned normally", nullptr, nullptr);
}

// "(2, 5, 64)" for use in `what` strings.
template <class T>
std::string shape_of(const T& t) {
    const std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
    return format_shape(shape);
}

// What the report shows for the current test case's first failure (set by fail()).
struct Diagnosis {
    std::string message;
    std::string mistake;      // empty: no catalogued mistake matched
    std::string explanation;
};
std::optional<Diagnosis>& pending_diagnosis();

}  // namespace headwise::grade
