// tests/grade/search.hpp -- the learner's own edit, found among the solution's single-edit
// variants and confirmed by running it.
//
// Each grader is linked with its exercise's mutant schemata (gradekit/mutants.hpp: every variant
// of the solution behind one selector) and their data: each variant's result, passed (P), failed
// (F) or threw (T), on every check of the grader, recorded beforehand (scripts/regenerate-mutants).
// As the learner's code goes through the checks, every check is observed here:
//   - the candidates are the variants whose recorded result on every check so far is the
//     learner's;
//   - on a check the learner fails, each candidate is run on this very check (in-process, no
//     compile) and kept only when it gives the learner's result within the check's tolerance:
//     the same values where they fail, the same exception where they throw. A variant whose
//     edited site no check so far has reached (the probe: the solution run with the selector at
//     -1 marks every site it passes) behaves exactly like the solution here, so the probe's run
//     is its run;
//   - the checks the learner passes are run for the candidates only when the run fails somewhere,
//     at the end (finish): the grader runs itself again with the likeliest candidate as its
//     subject (the recorder's mode below), and the candidate must pass every one of them.
// A candidate that survived both is the learner's edit, confirmed: "your code behaves exactly
// like the solution with `...` in place of `...`". No candidate, a check the data does not know, a
// crash: nothing is said. A learner who passes everything waits on no variant.
//
// HEADWISE_MUTANT=<id> turns a grader into the recorder of variant <id>'s fingerprint (0: the
// solution): the variant is the subject, and every check prints "[headwise-mutant] S\tdigest\tname".
#pragma once

#include "registry.hpp"

#include "headwise/base/tensor.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>

namespace headwise::grade::search {

// How a variant's result on a check compares with the learner's.
enum class Match { differs, within_tolerance, exactly };

// Observes one check: `status` is the learner's ('P', 'F', 'T', thrown from `error_line` of their
// file, 0 if unknown); `informative`: a failure that is not NaN alone (see informative());
// `digest` (called only when
// recording) sums up their result; `same` runs the check on the mutants at the selector this
// sets and says how its result compares with the learner's. Candidates that match exactly (the
// same digest, or the same exception from the same line) are named before those that match only
// within the tolerance.
void observe(std::string_view what, char status, long error_line, bool informative,
             const std::function<std::string()>& digest, const std::function<Match()>& same);

// The solution's line the last exception came from, when the mutant schemata threw it (its
// #line directives name "headwise-solution/..."); 0 when unknown. And the line of a report's
// "file:line[:column]".
long solution_throw_line();
long line_of_where(std::string_view where);

// The same exception: the same type and message (locations blanked), and thrown from the line the
// learner's threw from (the schemata keeps the solution's lines), when that is known.
inline bool same_throw(const std::string& theirs, const std::string& learners, long learner_line) {
    return theirs == learners && learner_line != 0 && solution_throw_line() == learner_line;
}

// Which of the solution's variants the functions under grade run as now (0: the solution itself).
// A grader that keeps a run per function pointer keys it by this too: every variant shares the
// schemata's pointers, and a run cached for one must not stand for another.
int selected_variant();

// In a run confirming a candidate (finish): whether the check about to run is one the learner
// failed -- compared value by value with the candidate in the confirming run already. It is then
// recorded with the learner's status and not run again (the costly checks are often the failing ones).
bool already_compared();

// After the last check: the confirmed edit, as the sentence to print, or empty. The checks the
// learner passed are confirmed here, by running this grader again as the candidate
// (registry.hpp's own_command).
std::string finish(bool run_failed);

// Whether a failing result says more than "NaN": a finite value of it differs from the expected
// one (by more than rounding), or its shape does. Results that differ only where they are NaN are
// what many edits give, so they name none.
template <class T>
bool informative(const T& actual, const T& expected) {
    const auto differs = [](double a, double e) {
        return std::isfinite(a) && std::abs(a - e) > 1e-4 * (1 + std::abs(e));
    };
    if constexpr (std::is_arithmetic_v<T>) {
        return differs(double(actual), double(expected));
    } else {
        if (actual.shape() != expected.shape()) return true;
        auto e = expected.begin();
        for (auto a = actual.begin(); a != actual.end(); ++a, ++e)
            if (differs(double(*a), double(*e))) return true;
        return false;
    }
}

// A result's values, at 4 significant digits, hashed: equal digests, equal results.
template <class T>
std::string digest_of(const T& result) {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](const std::string& s) {
        for (const unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    };
    if constexpr (std::is_arithmetic_v<T>) {
        mix(fmt::format("{}", result));
    } else {
        for (const auto n : result.shape()) mix(fmt::format("{},", n));
        for (const auto x : result) mix(fmt::format("{:.4g};", double(x)));
    }
    return fmt::format("{:016x}", h);
}

// The exception's type and message, locations blanked (grade.hpp).
inline std::string thrown_text(const std::exception& e);

// grade::expect's hook: the check `what` gave the learner `actual` (passed: equal to `expected`)
// or threw `error` (from line `error_line` of their file, 0 if unknown); `same_values` compares
// two results at the check's tolerance.
template <class Api, class Call, class Result, class Same>
void check(std::string_view what, const Call& call, const Result* actual, const std::exception* error, long error_line,
           bool passed, const Result& expected, const Same& same_values) {
    if (!mutants_slot<Api>()) return;
    const char status = error != nullptr ? 'T' : passed ? 'P' : 'F';
    const std::string thrown = error != nullptr ? thrown_text(*error) : std::string();
    observe(
        what, status, error_line, status != 'F' || informative(*actual, expected),
        [&] { return error != nullptr ? digest_of(std::hash<std::string>{}(thrown)) : digest_of(*actual); },
        [&] {
            try {
                const Result theirs = call(*mutants_slot<Api>());
                if (status == 'P') return same_values(theirs, expected) ? Match::within_tolerance : Match::differs;
                if (status != 'F' || !same_values(*actual, theirs)) return Match::differs;
                return digest_of(theirs) == digest_of(*actual) ? Match::exactly : Match::within_tolerance;
            } catch (const std::exception& e) {
                return status == 'T' && same_throw(thrown_text(e), thrown, error_line) ? Match::exactly
                                                                                       : Match::differs;
            } catch (...) {
                return Match::differs;
            }
        });
}

// grade::expect_usage_error's hook: the learner refused (P), returned (F) or threw another `error`
// (T, from line `error_line` of their file).
template <class Api, class Call>
void check_refusal(std::string_view what, const Call& call, char status, const std::exception* error, long error_line) {
    if (!mutants_slot<Api>()) return;
    const std::string thrown = error != nullptr ? thrown_text(*error) : std::string();
    observe(
        what, status, error_line, true, [&] { return digest_of(std::hash<std::string>{}(thrown)); },
        [&] {
            try {
                call(*mutants_slot<Api>());
                return status == 'F' ? Match::exactly : Match::differs;
            } catch (const usage_error&) {
                return status == 'P' ? Match::exactly : Match::differs;
            } catch (const std::exception& e) {
                return status == 'T' && same_throw(thrown_text(e), thrown, error_line) ? Match::exactly
                                                                                       : Match::differs;
            }
        });
}

}  // namespace headwise::grade::search

namespace headwise::grade {
std::string without_locations(std::string_view message);
}  // namespace headwise::grade

inline std::string headwise::grade::search::thrown_text(const std::exception& e) {
    return std::string(typeid(e).name()) + ": " + without_locations(e.what());
}
