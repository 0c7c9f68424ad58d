// gradekit/check.hpp -- the meta-tests' check of a grade report against what its subject is:
// `headwise-gradetool check-report SPEC REPORT` (tests/grade/check_grader.cmake runs the grade,
// this says whether the report is right).
//
//   the solution   every test passed, no failure
//   the stub       no test passed, every test failed saying "not implemented yet"
//   a .mistake     (gradekit/mistake.hpp) some test failed, and
//                    catalogued (mistakes/): some failure names it, none names another
//                    not catalogued (learner/, search/): none names a catalogued mistake, what
//                    `headwise grade N -v` prints is at most 120 lines and says nothing twice,
//                    and every expect line holds
//                    located (located/: expect-fresh or expect-located lines): the steps that
//                    follow a failed grade (fresh memory, transplant) say what it expects
#pragma once

#include "gradekit/mistake.hpp"
#include "gradekit/report.hpp"
#include "gradekit/steps.hpp"

#include <optional>
#include <string>
#include <vector>

namespace headwise::gradekit {

enum class Expected { solution, stub, mistake };

// What a located case's steps need: its subject, and its grader's build and binary.
struct LocatedSetup {
    Subject subject;
    fs::path build_dir;
    std::string target;
    fs::path solution;
    fs::path grader;
};

// The first thing wrong with the report, or empty. `spec` is read only for Expected::mistake.
// A located case (its spec has expect-fresh or expect-located lines) runs its steps with `located`
// (required then). May update the report (the steps do).
std::string check_report(Expected expected, const Mistake* spec, const fs::path& report,
                         const std::optional<LocatedSetup>& located = std::nullopt);

}  // namespace headwise::gradekit
