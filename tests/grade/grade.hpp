// tests/grade/grade.hpp -- what every grader (tests/grade/NN_topic.cpp) is written with.
//
// The subject under grade and the catalogue of known mistakes come from registry.hpp.
//
// A check runs one call on the subject and compares the result with an independent oracle:
// the shape first, then every value. A failing check does not stop its test case: the next
// checks run too, so the report sees every failing case. When a check fails, the diagnosis
// localises it (which batch/head/row/column, how many elements, rows that no longer sum to 1,
// a transpose, axis swap, constant factor, shift by one or permutation, the first NaN) and runs
// the same call on every catalogued mistake. A mistake is *named* only when it reproduces the
// subject's result on every check of the whole run -- failing and passing, each within its
// tolerance -- at least one failing check a large case (every axis >= 2, one >= 4, not all
// equal: see is_large); otherwise the report says that no known mistake matches. A subject that
// throws is reported with the line of its file that threw.
//
// Checks in lesson order: a grader checks intermediate results before the results built on them
// (ex03: per-head weights, then the output), and passes `after` = what already matched so the
// message can say where the difference must arise. Milestones: tag test cases "[part1]",
// "[part2]", ... (and "[optional]"); the report counts each part (report.cpp).
#pragma once

#include "registry.hpp"
#include "search.hpp"

#include "headwise/base/tensor.hpp"
#include "headwise/base/trace.hpp"

#include <fmt/format.h>
#include <typeinfo>
#include <catch2/catch.hpp>

#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace headwise::grade {

// Two results agree when every element satisfies |actual - expected| <= abs + rel * |expected|,
// NaN matching only NaN and inf only the same inf. The default suits float code checked
// against a double-precision oracle on inputs of order 1.
struct Tolerance {
    double abs = 1e-4;
    double rel = 1e-4;
};
// The one definition of agreeing: |actual - expected| <= abs + rel * |expected| (NaN, inf as above).
bool agrees(double actual, double expected, Tolerance tol);

// ---------------------------------------------------------------------------------------------
// Comparing results. `dims` names the expected result's dimensions ("B, H, N, d_head").

struct Outcome {
    bool same = true;
    std::string detail;                // one line, empty when same: where and how they differ, shape first
    std::vector<std::string> details;  // more lines for `headwise grade N -v`: elements, tolerance, patterns
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

// The bits grade builds fill memory with, so that a value never written is recognised: fresh heap
// memory (AddressSanitizer's malloc fill, 0xbe bytes) and every local variable
// (-ftrivial-auto-var-init=pattern, 0xfe bytes).
inline constexpr std::uint32_t fresh_heap_bits = 0xbebebebeu;
inline constexpr std::uint32_t fresh_local_bits = 0xfefefefeu;
// A float holding either fill: the subject never wrote it.
inline bool never_written(float v) {
    const auto bits = std::bit_cast<std::uint32_t>(v);
    return bits == fresh_heap_bits || bits == fresh_local_bits;
}

// A bool whose byte is neither 0 nor 1 was never written (grade builds fill fresh memory with 0xbe).
std::size_t unwritten_flags(const bool* data, std::size_t n);

inline Outcome compare(const Mask2& actual, const Mask2& expected, std::string_view dims, Tolerance) {
    const std::vector<std::size_t> sa(actual.shape().begin(), actual.shape().end());
    const std::vector<std::size_t> se(expected.shape().begin(), expected.shape().end());
    Outcome o = compare_flags(sa, std::vector<bool>(actual.begin(), actual.end()), se,
                              std::vector<bool>(expected.begin(), expected.end()), dims);
    if (const std::size_t n = unwritten_flags(actual.data(), actual.size()); !o.same && n > 0) {
        o.detail += fmt::format("; {} entries were never written (uninitialised memory: from_shape does not fill)", n);
    }
    return o;
}

Outcome compare(std::size_t actual, std::size_t expected, std::string_view what, Tolerance);

// Whether two results agree (shape, then every value within `tol`), without compare()'s diagnosis:
// what weighing each catalogued mistake against the subject needs, many times a check.
bool values_agree(std::span<const std::size_t> a_shape, std::span<const float> a, std::span<const std::size_t> b_shape,
                  std::span<const float> b, Tolerance tol);
template <std::size_t R>
bool agree(const Tensor<R>& a, const Tensor<R>& b, std::string_view, Tolerance tol) {
    const std::vector<std::size_t> sa(a.shape().begin(), a.shape().end()), sb(b.shape().begin(), b.shape().end());
    return values_agree(sa, {a.data(), a.size()}, sb, {b.data(), b.size()}, tol);
}
template <class Result>
bool agree(const Result& a, const Result& b, std::string_view dims, Tolerance tol) {
    return compare(a, b, dims, tol).same;
}

// A term of a count's formula: "bias vector" of `value` = d_model = 512 ("d_model" is `unit`).
struct Term {
    std::string name;  // "bias vector", "weight matrix"
    std::string unit;  // "d_model", "d_model^2"
    std::size_t value;
};
// The difference between two counts as a few of one of the formula's terms (at most 4), when
// exactly one such fits: "short by one bias vector (d_model
// = 512)". Empty when none fits, or more than one (then nothing certain can be said).
std::string count_difference(std::size_t actual, std::size_t expected, std::span<const Term> terms);

// Is this expected result a case large enough to tell mistakes apart? Tensors: every axis >= 2,
// one >= 4, and not all the same size (square masks: N >= 4). Counts: above 1000.
bool is_large(std::span<const std::size_t> shape);
template <std::size_t R>
bool is_large(const Tensor<R>& t) {
    const std::vector<std::size_t> s(t.shape().begin(), t.shape().end());
    return is_large(s);
}
inline bool is_large(const Mask2& m) { return m.shape()[0] >= 4 && m.shape()[1] >= 4; }
inline bool is_large(std::size_t count) { return count > 1000; }

// ---------------------------------------------------------------------------------------------
// Failing with a diagnosis.

// One failing check, as the report shows it and as mistake naming weighs it.
struct Diagnosis {
    std::string message;                // one line
    std::vector<std::string> details;   // for -v
    std::string where, source, lesson;  // the subject's line (a throw), and what to reread
    bool large = false;                 // counts towards "named only on a large case"
    std::vector<std::string> matching;  // catalogued mistakes that reproduce this failure
};

// Records `d` for the report and fails the current check without ending the test case.
void fail_check(Diagnosis d);

// Fails the current test case with `message`; `mistake` (may be null) is the one catalogued
// mistake this failure points at. Kept for graders that judge a case by hand (exercise 06).
[[noreturn]] void fail(const std::string& message, const std::string* mistake, const std::string* explanation);

// Explanations of every catalogued mistake, by name (filled as the catalogue is consulted).
void remember_explanation(const std::string& name, const std::string& explanation);

// Before each call on the subject: tells the grading step which check is running (a crash is
// then reported with it), and returns the check's name.
void announce(const std::string& what);

// The subject threw: where (its file:line:col, from the throw's stack) and what, translated
// (xtensor's "Incompatible dimension of arrays" becomes the two shapes). Never "not implemented
// yet": that one propagates, so a stub fails with it.
Diagnosis describe_exception(const std::string& what, const std::exception& e);

// Reproduction before naming: a catalogued mistake is named only when it gives the subject's
// result on every check, the failing ones (Diagnosis::matching) and the passing ones. A passing
// check rules out each mistake still in the running that gives another result on it.
// Whether `name` is still in the running: not ruled out by a passing check, and among the
// mistakes that reproduced every failing check so far.
bool still_possible(const std::string& name);
void rule_out(const std::string& name, const std::string& check);

// The subject passed a check: `same(api)` says whether a catalogued mistake's result on it is the
// subject's. A mistake that throws where the subject did not is ruled out; one whose part of the
// exercise is left undone ("not implemented yet": exercise 06's catalogue) says nothing here.
template <class Api, class Same>
void rule_out_by_passing_check(const std::string& check, const Same& same) {
    const GraderWork timed;
    for (const Mistake<Api>& m : catalogue<Api>()) {
        if (!still_possible(m.name)) continue;
        try {
            if (!same(m.api)) rule_out(m.name, check);
        } catch (const std::exception& e) {
            if (!std::string_view(e.what()).starts_with("not implemented yet")) rule_out(m.name, check);
        }
    }
}

// Every catalogued mistake still in the running that is wrong on this case and reproduces `actual`.
template <class Api, class Call, class Result>
std::vector<std::string> diagnose(const Call& call, const Result& actual, const Result& expected, std::string_view dims,
                                  Tolerance tol) {
    const GraderWork timed;
    std::vector<std::string> names;
    for (const Mistake<Api>& m : catalogue<Api>()) {
        remember_explanation(m.name, m.explanation);
        if (!still_possible(m.name)) continue;
        try {
            const Result theirs = call(m.api);
            if (agree(theirs, expected, dims, tol)) continue;  // harmless on this case
            if (agree(actual, theirs, dims, tol)) names.push_back(m.name);
        } catch (const std::exception&) {
            // this mistake cannot run this case (e.g. it produces a shape it then rejects)
        }
    }
    return names;
}

// `detail` with the likely cause after its NaN/inf clause ("first NaN at ... where the expected
// value is finite") when the call computes exponentials of finite inputs; as it is otherwise.
std::string with_cause_of_non_finite(const std::string& detail, bool exp_of_finite_inputs);

// A thrown message with its file:line[:col] references blanked, so the same failure from the
// learner's file and from a catalogued mistake's file reads the same.
std::string without_locations(std::string_view message);

// Every catalogued mistake that throws the same kind of exception with the same message
// (locations aside) as the subject did on this case.
template <class Api, class Call>
std::vector<std::string> diagnose_throw(const Call& call, const std::exception& subject_error) {
    const GraderWork timed;
    std::vector<std::string> names;
    const std::string expected = without_locations(subject_error.what());
    for (const Mistake<Api>& m : catalogue<Api>()) {
        remember_explanation(m.name, m.explanation);
        if (!still_possible(m.name)) continue;
        try {
            (void)call(m.api);
        } catch (const std::exception& theirs) {
            if (typeid(theirs) == typeid(subject_error) && without_locations(theirs.what()) == expected)
                names.push_back(m.name);
        }
    }
    return names;
}

// What one check is: which call on which input, how its result is read and compared.
template <class Result>
struct Check {
    // Which call on which input, e.g. "split_heads(x (2, 5, 64), heads = 8)". It describes the
    // check's set-up, so it must not read as blame ("with W_k = I", not "the query projection acts").
    std::string what;
    std::string_view dims;  // the expected result's dimensions, "B, H, N_q, N_k"
    Tolerance tol{};
    // What earlier checks of the *same* call already matched, from the subject's own values ("the
    // per-head weights" it returned beside this output): a difference here arises after them.
    // Never a check under another set-up: the subject's bug may be what that set-up hides.
    std::string_view after{};
    // The grader's own reading of a wrong result, added to the message (e.g. exercise 07: whether
    // the output rows are still LayerNorm's); empty when it has nothing certain to say.
    std::function<std::string(const Result&)> explain{};
    // The call computes exponentials (a softmax) of inputs that hold no -inf by design: a NaN or
    // inf it returns is then its own (an overflowing exp, 0/0), and the message may say so.
    bool exp_of_finite_inputs = false;
};

// Runs `call` on the subject and checks its result against `expected` as `check` says. "not
// implemented yet" propagates (the test fails with it, and it counts neither for nor against
// naming a mistake); other exceptions fail the check with the line that threw. Returns true
// when the check passed.
template <class Api, class Call, class Result>
bool expect(const std::type_identity_t<Check<Result>>& check, const Call& call, const Result& expected) {
    const std::string& what = check.what;
    const std::string_view dims = check.dims;
    const Tolerance tol = check.tol;
    announce(what);
    if (mutants_slot<Api>() && search::already_compared()) return false;  // confirming a candidate (search.hpp)
    std::optional<Result> actual;
    try {
        actual.emplace(call(subject<Api>()));
    } catch (const std::exception& e) {
        // A stub (or a launch wrapping one): the test fails with it, and it weighs on no name.
        if (std::string_view(e.what()).starts_with("not implemented yet")) throw;
        Diagnosis d = describe_exception(what, e);  // first: it reads where this throw came from
        search::check<Api>(
            what, call, static_cast<const Result*>(nullptr), &e, search::line_of_where(d.where), false, expected,
            [&](const Result& a, const Result& b) { return compare(a, b, dims, tol).same; });  // search.hpp
        d.large = is_large(expected);
        d.matching = diagnose_throw<Api>(call, e);
        fail_check(std::move(d));
        return false;
    }
    Outcome o = compare(*actual, expected, dims, tol);
    search::check<Api>(what, call, &*actual, nullptr, 0, o.same, expected,
                       [&](const Result& a, const Result& b) { return compare(a, b, dims, tol).same; });  // search.hpp
    if (o.same) {
        rule_out_by_passing_check<Api>(what, [&](const Api& api) { return agree(*actual, call(api), dims, tol); });
        SUCCEED(what);
        return true;
    }
    Diagnosis d;
    d.message = what + ": " + with_cause_of_non_finite(o.detail, check.exp_of_finite_inputs);
    if (check.explain) {
        if (const std::string note = check.explain(*actual); !note.empty()) d.message += "; " + note;
    }
    if (!check.after.empty())
        d.message += std::string("; ") + std::string(check.after) + " matched, so the difference arises after them";
    d.details = std::move(o.details);
    d.large = is_large(expected);
    d.matching = diagnose<Api>(call, *actual, expected, dims, tol);
    fail_check(std::move(d));
    return false;
}

// Runs `call` on the subject and requires it to refuse with headwise::usage_error (bad input).
template <class Api, class Call>
void expect_usage_error(const std::string& what, const Call& call) {
    announce(what);
    std::string problem;
    Diagnosis d;
    try {
        call(subject<Api>());
        problem = "should throw headwise::usage_error (bad input), but returned normally";
        search::check_refusal<Api>(what, call, 'F', nullptr, 0);  // search.hpp
    } catch (const usage_error&) {
        search::check_refusal<Api>(what, call, 'P', nullptr, 0);  // search.hpp
        // A mistake that accepts this bad input is not the subject.
        rule_out_by_passing_check<Api>(what, [&](const Api& api) {
            try {
                call(api);
            } catch (const usage_error&) {
                return true;
            }
            return false;
        });
        SUCCEED(what);
        return;
    } catch (const std::exception& e) {
        if (std::string_view(e.what()).starts_with("not implemented yet")) throw;
        // Another exception: where it was thrown and what it says, translated (an index out of
        // bounds while writing into a full buffer reads as such).
        Diagnosis thrown = describe_exception(what, e);
        search::check_refusal<Api>(what, call, 'T', &e, search::line_of_where(thrown.where));  // search.hpp
        problem = "should throw headwise::usage_error, but " +
                  thrown.message.substr(thrown.message.find(what) + what.size() + 2);
        d.where = std::move(thrown.where);
        d.source = std::move(thrown.source);
        d.lesson = std::move(thrown.lesson);
    }
    d.message = (d.where.empty() ? "" : d.where + ": ") + what + ": " + problem;
    const GraderWork timed;
    for (const Mistake<Api>& m : catalogue<Api>()) {  // mistakes that fail to refuse it too
        remember_explanation(m.name, m.explanation);
        if (!still_possible(m.name)) continue;
        try {
            call(m.api);
            d.matching.push_back(m.name);
        } catch (const usage_error&) {
        } catch (const std::exception&) {}
    }
    d.large = true;
    fail_check(std::move(d));
}

// "(2, 5, 64)" for use in `what` strings.
template <class T>
std::string shape_of(const T& t) {
    const std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
    return format_shape(shape);
}

// The failing checks of the current test case, in order (read by report.cpp).
std::vector<Diagnosis>& case_failures();
// Every failing check of the run so far (for naming at the end).
std::vector<Diagnosis>& run_failures();
// The catalogued mistake that fits every failing check of the run (and a large one), or empty.
std::string fitting_mistake();
std::string explanation_of(const std::string& name);

}  // namespace headwise::grade
