// runner/progress.hpp -- where a learner stands, recomputed from what is on disk:
//
//   build/grade/<id>.json          the last grade of each exercise (gradekit/report.hpp, written
//                                  by the grading steps; `headwise grade N` refreshes it)
//   exercises/<dir>/ vs the stub   "not started" = the learner's files are still the stub
//   build/headwise-progress.json   the little the runner remembers itself: how many hints of each
//                                  exercise were shown. Never inside exercises/; deleting it loses
//                                  nothing but the hint counter.
#pragma once

#include "common.hpp"

#include "gradekit/report.hpp"

#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace headwise::runner {

// The last grade (gradekit/report.hpp, the one report format) and when it was written.
struct GradeReport : gradekit::Report {
    fs::file_time_type written;
};

fs::path report_path(const Exercise& e);
// The last grade report, or nullopt when there is none or it cannot be parsed.
std::optional<GradeReport> read_report(const Exercise& e);

enum class Status { not_started, edited, does_not_compile, failing, passed };

struct ExerciseStatus {
    Status status = Status::not_started;
    int passed = 0;
    int total = 0;
    bool stale = false;  // a file changed after the last grade

    // "passed", "failing: 4 of 6 tests pass (edited since the last grade)", ...
    std::string describe() const;
};

// Reads the report and compares the learner's files with the pristine stubs (gradekit/stub.hpp).
ExerciseStatus exercise_status(const Exercise& e);
// Only the report: has the last grade passed every test?
bool exercise_passed(const Exercise& e);
// The first lesson whose exercise has not passed; nullptr when every exercise has.
const Lesson* next_lesson(const std::vector<Lesson>& course);
// The lesson's exercise, or a usage_error naming the lessons that have one.
const Exercise& require_exercise(const std::vector<Lesson>& course, const Lesson& lesson);

// Registers `headwise <name> N [<flag>]`, the shape of hint, reset and solution: one required
// exercise number and one boolean flag; `body(N, flag)` runs when it is the chosen command.
void add_exercise_command(CLI::App& app, Action& action, const std::string& name, const std::string& description,
                          const std::string& flag, const std::string& flag_help,
                          std::function<int(const std::string&, bool)> body);

struct State {
    std::map<std::string, std::set<int>> hints_shown;  // exercise id -> the hints revealed (1, 2, ...)
};
fs::path state_path();
State load_state();  // an unreadable state file counts as empty (with a note on stderr)
void save_state(const State& state);

}  // namespace headwise::runner
