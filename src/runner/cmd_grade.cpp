// `headwise grade [N] [--junit FILE]` -- grade one exercise or all of them, and say why.
//
// Runs ctest's "grade" tests (the same as `ctest --preset grade [-L exNN]`): for each exercise a
// build step, which turns a compile error into that exercise's failure and nothing else's, then
// its grader. Each grader leaves build/grade/<id>.json (tests/grade/report.cpp); this command reads
// those reports and prints one line per exercise: passed/total and the first failure, with the
// known mistake it matches and how to fix it. ctest's own output goes to build/grade/ctest.log.
// Exit code 0 only when every exercise asked for passes every test.
#include "common.hpp"
#include "progress.hpp"

#include <fmt/format.h>

#include <memory>
#include <sstream>

namespace headwise::runner {

namespace {

constexpr std::size_t line_width = 110;

// `text` broken at spaces into lines of at most line_width columns, each starting with `indent`.
void print_wrapped(const std::string& indent, const std::string& text) {
    const std::size_t room = line_width > indent.size() + 20 ? line_width - indent.size() : 20;
    std::istringstream words(text);
    std::string line, word;
    while (words >> word) {
        if (!line.empty() && line.size() + 1 + word.size() > room) {
            fmt::print("{}{}\n", indent, line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) fmt::print("{}{}\n", indent, line);
}

// "  ex03  03_multi_head        3/5  " and the first failure, explained.
void print_row(const Exercise& e, const std::optional<GradeReport>& r, const fs::path& log) {
    const std::string head = fmt::format("  {:<5} {:<20}", e.id, e.dir);
    const std::string indent(head.size() + 8, ' ');
    if (!r) {
        fmt::print("{}{:>6}  not graded: no report was written (see {})\n", head, "-", log.string());
        return;
    }
    if (!r->compiled) {
        const std::string error = r->failures.empty() ? std::string("(no compiler message)") : r->failures[0].message;
        fmt::print("{}{:>6}  does not compile: {}\n", head, "-", error);
        return;
    }
    const std::string score = fmt::format("{}/{}", r->passed, r->total);
    if (r->all_passed()) {
        fmt::print("{}{:>6}  passed\n", head, score);
        return;
    }
    if (r->failures.empty()) {
        fmt::print("{}{:>6}  not passed (see {})\n", head, score, log.string());
        return;
    }
    const GradeReport::Failure& f = r->failures[0];
    fmt::print("{}{:>6}  {}\n", head, score, f.test);
    print_wrapped(indent, f.message);
    if (!f.mistake.empty()) {
        fmt::print("{}known mistake \"{}\":\n", indent, f.mistake);
        std::istringstream lines(f.explanation);
        for (std::string line; std::getline(lines, line);) print_wrapped(indent + "  ", line);
    }
    if (r->failures.size() > 1) {
        fmt::print("{}({} more failing test{}: {})\n", indent, r->failures.size() - 1, r->failures.size() > 2 ? "s" : "",
                   report_path(e).string());
    }
}

int grade(const std::string& which, const std::string& junit) {
    const auto course = load_course();
    std::vector<Exercise> exercises;
    if (which.empty()) {
        for (const Lesson& l : course)
            if (l.exercise) exercises.push_back(*l.exercise);
        if (exercises.empty()) throw usage_error("course.json lists no exercises");
    } else {
        exercises.push_back(require_exercise(course, find_lesson(course, which)));
    }

    std::string labels;
    for (const Exercise& e : exercises) {
        labels += (labels.empty() ? "" : "|") + e.id;
        fs::remove(report_path(e));  // a report left from an earlier grade must not be mistaken for this one
    }
    const fs::path dir = binary_dir() / "grade";
    fs::create_directories(dir);
    const fs::path log = dir / "ctest.log";

    // ctest --preset grade, spelled out so that it works in any build directory; the shell only
    // redirects the output ("$1" is the log, the rest is the command, never re-parsed).
    std::vector<std::string> args{"sh", "-c", "log=$1; shift; exec \"$@\" >\"$log\" 2>&1", "sh", log.string(),
                                  "ctest", "--test-dir", binary_dir().string(), "--output-on-failure",
                                  "--no-tests=error", "-L", "^(" + labels + ")$"};
    if (!junit.empty()) {
        args.push_back("--output-junit");
        args.push_back(fs::absolute(junit).string());
    }
    fmt::print("headwise: grading {} (building what changed first)\n",
               exercises.size() == 1 ? "exercise " + exercises[0].id : fmt::format("{} exercises", exercises.size()));
    const int rc = run_program(args);

    int passed = 0;
    for (const Exercise& e : exercises) {
        const auto report = read_report(e);
        if (report && report->all_passed()) ++passed;
        print_row(e, report, log);
    }
    fmt::print("passed: {} of {} exercise{}. ctest's full output: {}\n", passed, exercises.size(),
               exercises.size() == 1 ? "" : "s", log.string());
    if (!junit.empty()) fmt::print("JUnit report: {}\n", fs::absolute(junit).string());
    if (passed == static_cast<int>(exercises.size()) && rc == 0) return 0;
    return 1;
}

}  // namespace

void add_grade_command(CLI::App& app, Action& action) {
    struct Args {
        std::string which;
        std::string junit;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("grade", "grade exercise N (or every exercise) and name the mistake behind a failure");
    cmd->add_option("exercise", args->which, "lesson number or name whose exercise to grade (default: all)");
    cmd->add_option("--junit", args->junit, "also write ctest's JUnit XML report to FILE (for instructors)");
    cmd->callback([&action, args] { action = [args] { return grade(args->which, args->junit); }; });
}

}  // namespace headwise::runner
