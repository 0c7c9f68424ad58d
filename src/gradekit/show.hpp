// gradekit/show.hpp -- one exercise's grade report as `headwise grade` prints it (the runner and
// `headwise-gradetool show`, which the meta-tests read, print the same text).
#pragma once

#include "gradekit/report.hpp"

#include <string>

namespace headwise::gradekit {

struct ShowOptions {
    std::string id;   // "ex03"
    std::string dir;  // "03_multi_head"
    int number = 0;   // the lesson's number, for the `./headwise grade N -v` hint
    bool verbose = false;
};

// -v prints each failing test's details (every failing check: shapes, elements, tolerance, the
// sanitizer's report) within this many lines for the whole exercise; the rest stay in the report.
constexpr int verbose_detail_lines = 52;  // ex09 with 11 tests failing: 114 lines in all

// "part 1 of 2 done; part 2 of 2 not yet (3 of 5 tests pass, 2 did not run); optional: 1 of 2 tests pass"
std::string milestones(const Report& r);

// The exercise's lines (each ending in '\n'); `r` null: no report was written.
std::string show_report(const Report* r, const ShowOptions& o);

}  // namespace headwise::gradekit
