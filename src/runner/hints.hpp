// runner/hints.hpp -- an exercise's HINTS.md: its "## Hint k" sections, and which of them is
// about the check the learner's last grade failed.
//
// A hint says what it helps with in a comment of its own, which is not printed:
//   ## Hint 3
//   <!-- when failing: fully masked; all padding -->
// Each phrase (separated by ';') is looked for, case-insensitively, in the failing tests' names
// and one-line messages of the last grade (build/grade/<id>.json).
#pragma once

#include "common.hpp"
#include "progress.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace headwise::runner {

struct Hint {
    std::string text;                // the section, without its heading and its comment
    std::vector<std::string> about;  // the "when failing:" phrases, lower case
};

fs::path hints_path(const Exercise& e);
std::vector<Hint> parse_hints(const std::string& markdown);
std::vector<Hint> load_hints(const Exercise& e);  // none when the file is missing

// The first hint (1-based) not in `revealed` that is about a check `report` failed, with that
// check's test name; nullopt when the report passed or no such hint is left.
struct KeyedHint {
    int number;
    std::string failing_test;
};
std::optional<KeyedHint> hint_for_failure(const std::vector<Hint>& hints, const gradekit::Report& report,
                                          const std::set<int>& revealed);

}  // namespace headwise::runner
