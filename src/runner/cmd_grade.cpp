// `headwise grade [N] [-v] [--junit FILE]` -- grade one exercise or all of them, and say why.
//
// For each exercise the two grading steps (gradekit/steps.hpp, the same code ctest's "grade"
// tests run through headwise-gradetool): build its grader, with a progress line, turning a
// compile error into that exercise's failure and nothing else's; then run it under the
// sanitizers, turning a crash into a diagnosis at the learner's line. Each leaves
// build/grade/<id>.json; this command prints, per exercise: passed/total, milestones, every
// failing test with its one-line reason (and where, for a crash or a throw), the known mistake
// when one fits every failing check, and the learner's warnings. -v adds each check's shapes,
// first differing elements and tolerance. --junit runs ctest instead, for its JUnit XML.
// Exit code 0 only when every exercise asked for passes every test.
#include "common.hpp"
#include "hints.hpp"
#include "progress.hpp"

#include "gradekit/pipeline.hpp"
#include "gradekit/show.hpp"
#include "gradekit/steps.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <unistd.h>
#include <memory>
#include <sstream>

namespace headwise::runner {

namespace {

void print_row(const Exercise& e, int number, const std::optional<GradeReport>& r, bool verbose) {
    fmt::print("{}", gradekit::show_report(r ? &*r : nullptr, {e.id, e.dir, number, verbose}));
}

// Where to look when stuck: a hint about a check that failed, not shown yet (hints.hpp).
void point_at_hint(const Exercise& e, int number, const GradeReport& r) {
    const State state = load_state();
    const auto shown = state.hints_shown.find(e.id);
    const auto keyed =
        hint_for_failure(load_hints(e), r, shown == state.hints_shown.end() ? std::set<int>{} : shown->second);
    if (keyed)
        fmt::print("  stuck? `./headwise hint {}` shows hint {}, about \"{}\"\n", number, keyed->number,
                   keyed->failing_test);
}

std::vector<fs::path> subject_files(const Exercise& e) {
    std::vector<fs::path> files;
    for (const auto& f : e.files) files.push_back(source_dir() / "exercises" / e.dir / f);
    return files;
}

// Build (with a progress line on a terminal) and run one exercise's grader.
void grade_one(const Exercise& e) {
    const gradekit::StepClock clock("grade");
    gradekit::Subject s{e.id, source_dir(), subject_files(e), report_path(e)};
    const bool tty = ::isatty(1) != 0;
    auto progress = [&](const std::string& line) {
        if (!tty) return;
        std::string shown = line.size() > 100 ? line.substr(0, 97) + "..." : line;
        fmt::print("\r\033[K  {} building: {}", e.id, shown);
        std::fflush(stdout);
    };
    const fs::path grader = binary_dir() / "tests" / "grade" / ("headwise_grade_" + e.id);
    const gradekit::AfterRun after{binary_dir(), "headwise_grade_" + e.id, grader, {}};
    // The repair step's compile, on the other core while this one builds and runs the grader.
    gradekit::Begun begun = gradekit::begin_before_build(s, after);
    const bool built = gradekit::build_step(s, binary_dir(), "headwise_grade_" + e.id, progress);
    if (tty) fmt::print("\r\033[K");
    clock.ended("build");
    if (!built) return;
    if (tty) {
        fmt::print("  {} running its grader...", e.id);
        std::fflush(stdout);
    }
    gradekit::run_step(s, grader, {}, {});
    clock.ended("run");
    // A failed run: the steps that locate the learner's slip (gradekit/pipeline.hpp).
    gradekit::after_failed_run(
        s, after,
        [&](const std::string& line) {
            if (!tty) return;
            fmt::print("\r\033[K  {} {}...", e.id, line);
            std::fflush(stdout);
        },
        &begun);
    clock.ended("after the run");
    if (tty) fmt::print("\r\033[K");
}

int grade(const std::string& which, bool verbose, const std::string& junit) {
    const auto course = load_course();
    std::vector<Exercise> exercises;
    std::vector<int> numbers;  // each exercise's lesson number
    if (which.empty()) {
        for (const Lesson& l : course)
            if (l.exercise) {
                exercises.push_back(*l.exercise);
                numbers.push_back(l.number);
            }
        if (exercises.empty()) throw usage_error("course.json lists no exercises");
    } else {
        const Lesson& l = find_lesson(course, which);
        exercises.push_back(require_exercise(course, l));
        numbers.push_back(l.number);
    }
    for (const Exercise& e : exercises) fs::remove(report_path(e));  // never mistake an old report for this one

    int rc = 0;
    const fs::path dir = binary_dir() / "grade";
    fs::create_directories(dir);
    if (junit.empty()) {
        fmt::print(
            "headwise: grading {} (building what changed first)\n",
            exercises.size() == 1 ? "exercise " + exercises[0].id : fmt::format("{} exercises", exercises.size()));
        for (const Exercise& e : exercises) grade_one(e);
    } else {
        // ctest --preset grade, spelled out so that it works in any build directory.
        std::string labels;
        for (const Exercise& e : exercises) labels += (labels.empty() ? "" : "|") + e.id;
        const fs::path log = dir / "ctest.log";
        fmt::print("headwise: grading through ctest (output in {})\n", log.string());
        rc = run_program({"sh", "-c", "log=$1; shift; exec \"$@\" >\"$log\" 2>&1", "sh", log.string(), "ctest",
                          "--test-dir", binary_dir().string(), "--output-on-failure", "--no-tests=error", "-L",
                          "^(" + labels + ")$", "--output-junit", fs::absolute(junit).string()});
    }

    int passed = 0;
    for (std::size_t i = 0; i < exercises.size(); ++i) {
        const auto report = read_report(exercises[i]);
        if (report && report->all_passed()) ++passed;
        print_row(exercises[i], numbers[i], report, verbose);
        if (report && report->compiled && !report->all_passed()) point_at_hint(exercises[i], numbers[i], *report);
    }
    // The report's real name: one exercise's file, or the first and last of several.
    const std::string reports = exercises.size() == 1 ? "Report: " + report_path(exercises.front()).string()
                                                      : fmt::format("Reports: {}/{}.json .. {}.json", dir.string(),
                                                                    exercises.front().id, exercises.back().id);
    fmt::print("passed: {} of {} exercise{}. {}\n", passed, exercises.size(), exercises.size() == 1 ? "" : "s",
               reports);
    if (!junit.empty()) fmt::print("JUnit report: {}\n", fs::absolute(junit).string());
    if (passed == static_cast<int>(exercises.size()) && rc == 0) return 0;
    return 1;
}

}  // namespace

void add_grade_command(CLI::App& app, Action& action) {
    struct Args {
        std::string which;
        bool verbose = false;
        std::string junit;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("grade", "grade exercise N (or every exercise) and say what is wrong and where");
    cmd->add_option("exercise", args->which, "lesson number or name whose exercise to grade (default: all)");
    cmd->add_flag("-v,--verbose", args->verbose, "every failing check: shapes, first differing elements, tolerance");
    cmd->add_option("--junit", args->junit, "also write ctest's JUnit XML report to FILE (for instructors)");
    cmd->callback([&action, args] { action = [args] { return grade(args->which, args->verbose, args->junit); }; });
}

}  // namespace headwise::runner
