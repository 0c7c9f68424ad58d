// gradekit/pipeline.hpp -- grading one exercise, its steps in their one order.
//
//   (begun)      the repair's compile of the learner's file, in a thread of its own while the grader
//                is built and run: it needs nothing they make (schemata.hpp; headwise grade only)
//   build        the grader, with the learner's file (steps.hpp)
//   run          the grader: every check, the search, the catalogue (steps.hpp)
//   after a failed run, each step only when the one before left something to say:
//   repair       one or two edits of the learner's own lines that make the checks pass (repair.hpp)
//   transplant   nothing repaired: their lines that differ from the solution's, put back (transplant.hpp)
//   fresh memory a name stands only if the results do not hang on memory never written (fresh_memory.hpp)
//   unread       nothing named (or a repair of part): a value the compiler says no line reads, in a
//                function whose checks (still) fail, is asked about (unused.hpp)
//
// `headwise grade` (runner), `headwise-gradetool after-run` and the meta-tests' located cases
// (check.hpp) all call after_failed_run: a grade means the same wherever it is asked for.
#pragma once

#include "gradekit/steps.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace headwise::gradekit {

// HEADWISE_GRADE_DEBUG: when each step of a grade ended, on stderr (the repair step adds its own
// phases).
class StepClock {
public:
    explicit StepClock(const char* clock);  // what the times count from: "grade", "after the run"
    void ended(const char* step) const;

private:
    const char* clock_;
    std::chrono::steady_clock::time_point began_;
    bool debug_;
};

struct AfterRun {
    fs::path build_dir;  // a Ninja build directory holding the grader's target
    std::string target;  // headwise_grade_ex05
    fs::path grader;     // its executable
    fs::path solution;   // the solution of the subject's first file (empty: found under solutions/)
};

class SchemataInAdvance;

// What is begun before the build, and stopped when the grade ends without it (a pass).
struct Begun {
    Begun();
    Begun(Begun&&) noexcept;
    ~Begun();
    std::unique_ptr<SchemataInAdvance> schemata;
};
Begun begin_before_build(const Subject& s, const AfterRun& a);

// What each step said (empty: nothing), also written into s.report.
struct Findings {
    std::string repaired, located, fresh, unread;
};

// The steps after a failed run (s.report written by run_step), in order. `progress` (may be empty)
// hears one line now and then.
// `begun` (may be null): what begin_before_build began for this grade.
Findings after_failed_run(const Subject& s, const AfterRun& a, const std::function<void(const std::string&)>& progress,
                          Begun* begun = nullptr);

}  // namespace headwise::gradekit
