// gradekit/fresh_memory -- does the learner's result depend on memory their code never wrote?
//
// A grade fills fresh heap memory with 0xbe bytes. Code that reads an element it never set (a
// tensor from from_shape whose diagonal is never written, a sum that starts from whatever was
// there) then gives results that only look like some mistake: a bool made of 0xbe is true, so a
// mask whose diagonal was never set hides the diagonal, as the catalogued "j >= i" does. Before
// such a name stands, the grader runs again with fresh memory filled with 0: results that change
// are the learner reading what they never wrote, and that is what the grade then says.
#pragma once

#include "gradekit/report.hpp"
#include "gradekit/steps.hpp"

#include <filesystem>
#include <future>
#include <optional>
#include <string>

namespace headwise::gradekit {

// After a failed run that named something (a catalogued mistake, the search's edit, a repair of
// part of the failing checks): runs
// `grader` again with fresh memory filled with 0 (no search). When the passing tests differ,
// the catalogued names are dropped from s.report, and the search's edit unless it is the
// learner's own line; its `located` sentence says what changed (the transplant's sentence, if
// any, after it). Returns that sentence, or empty.
//
// `begun` (may be null): that run, begun beside the steps before this one (zero_filled_run).
std::string fresh_memory_step(const Subject& s, const std::filesystem::path& grader,
                              std::future<std::optional<Report>>* begun = nullptr);

// The run fresh_memory_step reads: `grader` on fresh memory filled with 0, its report. Begun by `headwise grade` as soon as
// the learner's run has failed, on the core the repair step's compile leaves idle, so that its
// second or two (exercise 6's kernels) is not waited for after the repair.
std::optional<Report> zero_filled_run(const Subject& s, const std::filesystem::path& grader);

}  // namespace headwise::gradekit
