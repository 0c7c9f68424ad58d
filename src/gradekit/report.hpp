// gradekit/report.hpp -- the one grade report: build/grade/<id>.json, written by the grader
// binary (its Catch2 listener, tests/grade/report.cpp), amended by the build and run steps
// (gradekit/steps.hpp: a compile error, the learner's warnings, a crash), and read by the runner
// (`headwise grade/list/watch`) and the meta-tests. Everything goes through write_report and
// read_report here.
//
//   {"id": "ex03", "compiled": true, "finished": true, "passed": 4, "total": 6,
//    "running": "",                                   (the test case in progress, if any)
//    "failures": [{"test": "...", "message": "first failing check, one line",
//                  "mistake": "name" | null, "explanation": "two lines or empty",
//                  "where": "exercises/03_multi_head/multi_head.cpp:41:17" | "",
//                  "source": "the learner's line at `where`", "lesson": "where to reread",
//                  "details": ["verbose lines: every failing check, shapes, elements, tolerance"]}],
//    "warnings": ["exercises/...cpp:12:9: warning: ... [-Wsign-compare]\n  source\n  caret"],
//    "parts": [{"name": "part 1", "passed": 3, "total": 3, "ran": 3}],
//    "edit": "your code behaves exactly like the solution with `...` in place of `...` (...)" | "",
//    "located": "found by trying: with your line 23 (`...`) as the solution has it, ..." | "",
//    "repaired": "found by repairing your code: with `...` in place of your line 16 (...), ..." | ""}
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace headwise::gradekit {

struct Failure {
    std::string test;                  // the Catch2 test case ("(build)" for a compile error)
    std::string message;               // one line: what failed and why
    std::string mistake;               // a catalogued mistake that fits every failing case, or empty
    std::string explanation;           // its two lines, or empty
    std::string where;                 // file:line:col in the learner's file (memory errors, crashes, throws)
    std::string source;                // that line of source
    std::string lesson;                // the lesson section or doc that explains the concept
    std::vector<std::string> details;  // what `headwise grade N -v` prints
    double seconds = 0;                // how long the test ran (0: not known -- it crashed)
};

// A milestone: the test cases tagged [partN] (and [optional]) of an exercise.
struct Part {
    std::string name;  // "part 1", "optional"
    int passed = 0;
    int total = 0;
    int ran = 0;  // tests that started (the others did not run: the grader stopped before them)
};

struct Report {
    std::string id;
    bool compiled = false;
    bool finished = false;  // false: the grader stopped early (crash, timeout) or never ran
    int passed = 0;
    int total = 0;
    // The checks (Catch2 assertions) that passed in the run: with the run stopped at its first
    // failure (-a), how far it got inside the test that failed -- an edit that mends the weights
    // but not the output passes more of them (the repair step's partial progress).
    int assertions_passed = 0;
    std::string running;  // the test case that was running when the report was written
    std::vector<Failure> failures;
    std::vector<std::string> warnings;
    std::vector<Part> parts;
    // The learner's own edit, found by the grader's search and confirmed on every check
    // (tests/grade/search.hpp): "your code behaves exactly like the solution with ...", or empty.
    std::string edit;
    // The learner's lines that make the difference, found by grading copies of their file with
    // one differing piece put back as the solution has it (gradekit/transplant.hpp), or empty.
    std::string located;
    // The learner's slip, found by repairing their own file: "found by repairing your code: with
    // ... in place of your line N (...), every check passes" (gradekit/repair.hpp), or empty.
    std::string repaired;
    // `repaired` names repairs of part of the failing checks only (repair.hpp's partial): the
    // transplant step still runs, and what it finds to explain every check replaces it.
    bool repaired_partly = false;
    // With repaired_partly: the checks that still fail with the repair of part (its other slip's).
    std::vector<std::string> still_failing;

    bool all_passed() const { return compiled && finished && total > 0 && passed == total && failures.empty(); }
};

// The names of the tests that failed.
std::set<std::string> failing_tests(const Report& r);

// Catch2's -f file: one test name a line, read as a test spec (commas and brackets escaped), for a
// grader run on some of its checks.
void write_check_list(const std::filesystem::path& path, const std::vector<std::string>& checks);

// Whether a run failed in a way worth locating: it compiled, ran to its end and failed, and not
// only where the learner has written nothing yet (the stub's "not implemented yet").
bool worth_locating(const Report& r);

// The line a search edit puts in ("... with `X` in place of `Y` ..."): X, or empty (a dropped
// statement, or no edit).
std::string edited_line_of(const std::string& edit);

// Writes atomically (a temporary file renamed over the target); creates the directory.
// Returns false (and writes nothing) when it cannot: a report never fails a grade by itself.
bool write_report(const std::filesystem::path& path, const Report& report);
// nullopt when missing or unreadable (half-written, foreign).
std::optional<Report> read_report(const std::filesystem::path& path);

}  // namespace headwise::gradekit
