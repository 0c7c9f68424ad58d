// gradekit/transplant.hpp -- the learner's line that makes the difference, found by trying it.
//
// The grader's search (tests/grade/search.hpp) names an edit only when it is one of the
// solution's single-edit variants. A learner's own mistake is often not: `total += heads * w`
// for `total += w`, a statement left out, a condition rewritten. This step asks the learner's
// file itself. Where it differs from the solution (line by line, whitespace and // comments aside),
// each small differing piece ("hunk") is put back as the solution has it, alone, in a copy of the
// learner's file that is compiled and linked out of the tree exactly as the grader was (ninja's
// own commands) and graded. A copy that passes every check names the learner's lines:
//
//   found by trying: with your line 23 (`total += heads * w;`) as the solution has it, and
//   nothing else changed, every test passes -- the mistake is on that line
//
// A copy that passes some of the failing tests, and breaks none, is named as such. Nothing is
// said when no copy improves on the learner's run: the step names only what it has reproduced.
// It runs after a failed run whose search confirmed nothing, or confirmed an edit on a line the
// learner did not change (another edit with the same effect: the search's sentence is then put in
// the learner's line numbers, and their own changed lines are tried too), for at most `max_hunks`
// hunks of at most `max_hunk_lines` lines each (a rewrite is not a slip), and never writes under
// exercises/.
#pragma once

#include "gradekit/steps.hpp"

#include <functional>
#include <string>
#include <vector>

namespace headwise::gradekit {

// One place where the learner's lines differ from the solution's: learner lines
// [learner_first, learner_last] (1-based; empty when learner_last < learner_first: a deletion
// after line learner_first - 1) stand where the solution has `solution_text`.
struct Hunk {
    int learner_first = 0;
    int learner_last = -1;
    std::vector<std::string> solution_text;
    int solution_first = 0;  // the solution's lines it stands for (empty when solution_last < solution_first)
    int solution_last = -1;
};

// The hunks between two files' lines, in order (exposed for tests).
std::vector<Hunk> differing_hunks(const std::vector<std::string>& learner, const std::vector<std::string>& solution);

// Where the solution's line `solution_line` (1-based) is in the learner's file: the same line where
// the two agree, else the first learner line of the hunk that stands for it; 0 when unknown.
int learner_line_of(int solution_line, const std::vector<std::string>& learner,
                    const std::vector<std::string>& solution);

// A search sentence's "(line N, ...)" (the solution's numbering) in the learner's numbering.
std::string in_learner_lines(const std::string& sentence, const std::vector<std::string>& learner,
                             const std::vector<std::string>& solution);

// `learner` with `h` put back as the solution has it.
std::vector<std::string> with_hunk_replaced(const std::vector<std::string>& learner, const Hunk& h);

struct TransplantSetup {
    fs::path build_dir;  // a Ninja build directory holding the grader's target
    std::string target;  // headwise_grade_ex05
    fs::path solution;   // the solution of the subject's first file (empty: found under solutions/)
    int max_hunks = 4;
    int max_hunk_lines = 8;
    int max_region_lines = 24;  // a rewrite: neighbouring pieces (or one long one) put back together
    int jobs = 2;               // tries compiled and run at once
};

// After a failed run (s.report written by run_step): tries each hunk, and writes what it found
// into the report's "located" sentence. `progress` (may be empty) hears one line per try.
// Returns the sentence (empty: nothing reproduced, or nothing to try).
std::string transplant_step(const Subject& s, const TransplantSetup& t,
                            const std::function<void(const std::string&)>& progress);

}  // namespace headwise::gradekit
