// gradekit/repair.hpp -- the learner's own lines, repaired: their slip named by the edit of *their*
// file that makes the failing checks pass.
//
// The search (tests/grade/search.hpp) and the transplant step compare the learner's code with the
// solution's; a learner who wrote the exercise their own way (helpers, lambdas, std algorithms)
// differs from it everywhere. This step asks their file alone. The mutation operators that make the
// solution's variants (gradekit/mutants.hpp) are applied to the learner's file: each is one small
// edit of one of their lines (< for <=, min for max, one variable for another, a constant, an int
// start value made a float, a statement dropped...). All of them go into one schemata -- the
// learner's file with every edit behind a selector, compiled and linked once as the grader was
// (rebuild.hpp; an edit that does not compile is dropped and the file compiled again) -- and
// each edit the failing checks reach is run on those checks. An edit that makes some of them pass
// is then run on every check: it is a repair when it breaks none that passed.
//
//   found by repairing your code: with `const float total = std::accumulate(first, last, 0.0f);`
//   in place of your line 16 (`const float total = std::accumulate(first, last, 0);`, in
//   softmax_row), every check passes
//
// With two slips no one edit repairs everything: the edit that repairs the most (breaking nothing)
// is kept on, and every other edit screened on what still fails; two that together pass every
// check are named each with the checks it repairs ("..., the 3 failing checks of softmax_last_axis
// pass; with that and `...` in place of your line 35 (...), the other 3 failing checks pass too:
// every check passes"). Only what passes every check is said -- an edit that repairs part may
// hide the slip rather than undo it -- and nothing when no edit makes a failing check pass: the
// step names only what it has reproduced. It never writes under exercises/.
#pragma once

#include "gradekit/steps.hpp"

#include <functional>
#include <string>

namespace headwise::gradekit {

struct RepairSetup {
    fs::path build_dir;          // a Ninja build directory holding the grader's target
    std::string target;          // headwise_grade_ex05
    int jobs = 2;                // edits run at once
    int budget_s = 30;           // from the step's start: the edits not run by then are not tried
    double slowest_probe_s = 5;  // failing checks slower than this (the learner's code on them): no repair
    int slowest_compile_s = 12;  // the schemata's compiles, in all: past it, no repair
};

// After a failed run (s.report written by run_step): writes what it found into the report's
// "repaired" sentence. `progress` (may be empty) hears one line now and then. Returns the
// sentence (empty: nothing repaired, or nothing to try).
std::string repair_step(const Subject& s, const RepairSetup& t,
                        const std::function<void(const std::string&)>& progress);

}  // namespace headwise::gradekit
