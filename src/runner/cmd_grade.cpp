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
#include "progress.hpp"

#include "gradekit/steps.hpp"

#include <fmt/format.h>

#include <unistd.h>
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

// Each line as it is (compiler output keeps its columns), indented.
void print_lines(const std::string& indent, const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) fmt::print("{}{}\n", indent, line);
}

// "part 1 of 2 done; part 2: 3 of 5 tests pass; optional: 1 of 2"
std::string milestones(const gradekit::Report& r) {
    int parts = 0, done = 0;
    for (const auto& p : r.parts)
        if (p.name != "optional") {
            ++parts;
            if (p.passed == p.total) ++done;
        }
    if (parts == 0) return {};
    std::string s;
    for (const auto& p : r.parts) {
        if (p.name == "optional") continue;
        s +=
            fmt::format("{}{} of {} {}", s.empty() ? "" : "; ", p.name, parts,
                        p.passed == p.total ? "done" : fmt::format("not yet ({} of {} tests pass)", p.passed, p.total));
    }
    for (const auto& p : r.parts)
        if (p.name == "optional") s += fmt::format("; optional: {} of {} tests pass", p.passed, p.total);
    return s;
}

void print_row(const Exercise& e, int number, const std::optional<GradeReport>& r, bool verbose) {
    const std::string head = fmt::format("  {:<5} {:<20}", e.id, e.dir);
    const std::string indent(8, ' ');
    if (!r) {
        fmt::print("{}{:>6}  not graded: no report was written\n", head, "-");
        return;
    }
    if (!r->compiled) {
        fmt::print("{}{:>6}  does not compile. The compiler's first error:\n", head, "-");
        print_lines(indent, r->failures.empty() ? std::string("(no compiler message)") : r->failures[0].message);
        if (verbose && !r->failures.empty()) {
            fmt::print("{}the whole build output:\n", indent);
            for (const auto& line : r->failures[0].details) fmt::print("{}  {}\n", indent, line);
        }
    } else {
        const std::string score = fmt::format("{}/{}", r->passed, r->total);
        const std::string parts = milestones(*r);
        fmt::print("{}{:>6}  {}{}\n", head, score, r->all_passed() ? "passed" : "not passed yet",
                   parts.empty() ? "" : " -- " + parts);
        for (const auto& f : r->failures) {
            fmt::print("{}FAIL {}\n", indent, f.test);
            print_wrapped(indent + "     ", f.message);
            if (!f.source.empty()) fmt::print("{}       {}\n", indent, f.source);
            if (!f.lesson.empty()) fmt::print("{}     reread: {}\n", indent, f.lesson);
            if (verbose)
                for (const auto& line : f.details) fmt::print("{}       {}\n", indent, line);
        }
        bool diagnosable = false;  // a failure other than an unwritten function
        for (const auto& f : r->failures) diagnosable = diagnosable || f.message.rfind("not implemented yet", 0) != 0;
        if (diagnosable) {
            const auto& f = r->failures[0];
            if (!f.mistake.empty()) {
                fmt::print("{}known mistake \"{}\" (it reproduces every failing check):\n", indent, f.mistake);
                std::istringstream lines(f.explanation);
                for (std::string line; std::getline(lines, line);) print_wrapped(indent + "  ", line);
            } else {
                fmt::print("{}no known mistake matches every failing check: the differences above say where to look.\n",
                           indent);
            }
            if (!verbose)
                fmt::print("{}(`./headwise grade {} -v`: every failing check with shapes, elements, tolerance)\n",
                           indent, number);
        }
    }
    if (!r->warnings.empty()) {
        fmt::print("{}warnings in your file ({}; not errors, but often a bug):\n", indent, r->warnings.size());
        for (const auto& w : r->warnings) print_lines(indent + "  ", w);
    }
}

std::vector<fs::path> subject_files(const Exercise& e) {
    std::vector<fs::path> files;
    for (const auto& f : e.files) files.push_back(source_dir() / "exercises" / e.dir / f);
    return files;
}

// Build (with a progress line on a terminal) and run one exercise's grader.
void grade_one(const Exercise& e) {
    gradekit::Subject s{e.id, source_dir(), subject_files(e), report_path(e)};
    const bool tty = ::isatty(1) != 0;
    auto progress = [&](const std::string& line) {
        if (!tty) return;
        std::string shown = line.size() > 100 ? line.substr(0, 97) + "..." : line;
        fmt::print("\r\033[K  {} building: {}", e.id, shown);
        std::fflush(stdout);
    };
    const bool built = gradekit::build_step(s, binary_dir(), "headwise_grade_" + e.id, progress);
    if (tty) fmt::print("\r\033[K");
    if (!built) return;
    if (tty) {
        fmt::print("  {} running its grader...", e.id);
        std::fflush(stdout);
    }
    gradekit::run_step(s, binary_dir() / "tests" / "grade" / ("headwise_grade_" + e.id), {}, {});
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
    }
    fmt::print("passed: {} of {} exercise{}. Reports: {}/<id>.json\n", passed, exercises.size(),
               exercises.size() == 1 ? "" : "s", dir.string());
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
