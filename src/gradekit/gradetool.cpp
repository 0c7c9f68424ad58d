// headwise-gradetool -- the grading steps for ctest and CMake (the runner links the same code):
//
//   headwise-gradetool stub SOLUTION STUB
//       writes the stub of SOLUTION (gradekit/stub.hpp) to STUB, only when its content changes
//   headwise-gradetool build --id ex01 --source-dir DIR --report FILE --subject FILE... --build-dir DIR --target T
//       builds one grader; a compile error becomes the report (exit 1)
//   headwise-gradetool run --id ex01 --source-dir DIR --report FILE --subject FILE... -- GRADER [ARGS...]
//       runs a grader under the sanitizers and completes its report (exit 0: every test passed)
//   headwise-gradetool transplant --id ex01 --source-dir DIR --report FILE --subject FILE --build-dir DIR --target T
//                      [--solution FILE]
//       after a failed run: grades copies of the subject with one differing piece put back as the
//       solution has it (gradekit/transplant.hpp); prints what it found (exit 0) or nothing (exit 1)
//   headwise-gradetool fresh-memory --id ex01 --source-dir DIR --report FILE --subject FILE -- GRADER
//       after a failed run that named something: the grader again with fresh memory filled with 0
//       (gradekit/fresh_memory.hpp); prints what changed (exit 0) or nothing (exit 1)
//   headwise-gradetool patch SPEC SOLUTION OUT
//       a catalogued or learner-style mistake (tests/grade/mistakes/*.mistake,
//       tests/grade/learner_mistakes/<id>/*.mistake): SOLUTION with each "replace: <text>" of SPEC
//       (found exactly once) replaced by the "with: <text>" after it,
//       one line for one line, so line numbers stay those of the solution ("replace#N: <text>":
//       its N-th occurrence)
//
//   headwise-gradetool mutants list|schemata|mark|record|check ...
//       the single-edit variants of a solution that the grader's search matches (gradekit/mutants.hpp)
//
//   headwise-gradetool show --report FILE [--id ex01] [--dir 01_single_head] [-v]
//       prints the report as `headwise grade` does (gradekit/show.hpp)
//
// Bad arguments: one line on stderr, exit code 2.
#include "gradekit/fresh_memory.hpp"
#include "gradekit/mutants.hpp"
#include "gradekit/report.hpp"
#include "gradekit/show.hpp"
#include "gradekit/steps.hpp"
#include "gradekit/stub.hpp"
#include "gradekit/transplant.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace headwise::gradekit;

namespace {

struct usage : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw usage(fmt::format("cannot read {}", path));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

int stub(const std::vector<std::string>& args) {
    if (args.size() != 2) throw usage("usage: headwise-gradetool stub SOLUTION STUB");
    write_if_changed(args[1], split_solution(read_all(args[0]), args[0]).stub);
    return 0;
}

int patch(const std::vector<std::string>& args) {
    if (args.size() != 3) throw usage("usage: headwise-gradetool patch SPEC SOLUTION OUT");
    const std::string spec = read_all(args[0]);
    std::string text = read_all(args[1]);
    std::istringstream lines(spec);
    std::string line, from;
    int line_no = 0, replaced = 0, occurrence = 0;
    while (std::getline(lines, line)) {
        ++line_no;
        if (line.rfind("replace: ", 0) == 0) {
            from = line.substr(9);
            occurrence = 0;
        } else if (line.rfind("replace#", 0) == 0 && line.find(": ") != std::string::npos) {
            // "replace#2: text": the second occurrence of text (the others are left alone)
            occurrence = std::stoi(line.substr(8));
            from = line.substr(line.find(": ") + 2);
        } else if (line.rfind("with: ", 0) == 0) {
            if (from.empty())
                throw usage(fmt::format("{}:{}: 'with:' without a 'replace:' before it", args[0], line_no));
            const std::string to = line.substr(6);
            std::size_t at = text.find(from);
            for (int k = 1; k < occurrence && at != std::string::npos; ++k) at = text.find(from, at + 1);
            if (at == std::string::npos || (occurrence == 0 && text.find(from, at + 1) != std::string::npos)) {
                throw usage(
                    fmt::format("{}:{}: the text to replace must occur exactly once in {} (or say which: "
                                "replace#N:): {}",
                                args[0], line_no - 1, args[1], from));
            }
            text.replace(at, from.size(), to);
            from.clear();
            ++replaced;
        }
    }
    if (replaced == 0) throw usage(fmt::format("{}: no 'replace:' / 'with:' pair", args[0]));
    write_if_changed(args[2], text);
    return 0;
}

int show(const std::vector<std::string>& args) {
    std::string report;
    ShowOptions o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto value = [&]() -> const std::string& {
            if (i + 1 >= args.size()) throw usage(fmt::format("{} needs a value", args[i]));
            return args[++i];
        };
        if (args[i] == "--report")
            report = value();
        else if (args[i] == "--id")
            o.id = value();
        else if (args[i] == "--dir")
            o.dir = value();
        else if (args[i] == "-v")
            o.verbose = true;
        else
            throw usage(fmt::format("unknown argument '{}'", args[i]));
    }
    if (report.empty()) throw usage("show needs --report FILE");
    const auto r = read_report(report);
    if (!r) throw usage(fmt::format("cannot read the report {}", report));
    if (o.id.empty()) o.id = r->id;
    fmt::print("{}", show_report(&*r, o));
    return 0;
}

int steps(const std::string& command, const std::vector<std::string>& args) {
    Subject s;
    fs::path build_dir;
    std::string target;
    std::vector<std::string> grader;
    fs::path solution;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> const std::string& {
            if (i + 1 >= args.size()) throw usage(fmt::format("{} needs a value", a));
            return args[++i];
        };
        if (a == "--id")
            s.id = value();
        else if (a == "--source-dir")
            s.source_dir = value();
        else if (a == "--report")
            s.report = value();
        else if (a == "--build-dir")
            build_dir = value();
        else if (a == "--target")
            target = value();
        else if (a == "--subject")
            s.files.emplace_back(value());
        else if (a == "--solution")
            solution = value();
        else if (a == "--") {
            grader.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
            break;
        } else
            throw usage(fmt::format("unknown argument '{}'", a));
    }
    if (s.id.empty() || s.source_dir.empty() || s.report.empty() || s.files.empty()) {
        throw usage(fmt::format("{} needs --id, --source-dir, --report and at least one --subject", command));
    }
    const auto echo = [](const std::string& line) { std::puts(line.c_str()); };
    int timeout = 90;
    if (const char* t = std::getenv("HEADWISE_GRADE_TIMEOUT")) timeout = std::atoi(t);
    if (command == "build") {
        if (build_dir.empty() || target.empty()) throw usage("build needs --build-dir and --target");
        if (build_step(s, build_dir, target, {})) return 0;
        const auto r = read_report(s.report);
        if (r) {
            for (const auto& line : r->failures.at(0).details) std::puts(line.c_str());
            fmt::print("{} does not compile. The first error:\n{}\n", s.id, r->failures.at(0).message);
        }
        return 1;
    }
    if (command == "transplant") {
        if (build_dir.empty() || target.empty()) throw usage("transplant needs --build-dir and --target");
        TransplantSetup t;
        t.build_dir = build_dir, t.target = target, t.solution = solution;
        const std::string found = transplant_step(s, t, {});
        if (!found.empty()) std::puts(found.c_str());
        return found.empty() ? 1 : 0;
    }
    if (grader.empty()) throw usage(command + " needs -- GRADER [ARGS...]");
    if (command == "fresh-memory") {
        const std::string found = fresh_memory_step(s, grader[0]);
        if (!found.empty()) std::puts(found.c_str());
        return found.empty() ? 1 : 0;
    }
    const std::vector<std::string> extra(grader.begin() + 1, grader.end());
    const int rc = run_step(s, grader[0], extra, echo, timeout);
    if (const auto r = read_report(s.report)) {
        for (const auto& f : r->failures) fmt::print("headwise-gradetool: {}: {}\n", f.test, f.message);
    }
    return rc;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> all(argv + 1, argv + argc);
    try {
        if (all.empty()) throw usage("usage: headwise-gradetool stub|patch|show|build|run ...");
        const std::vector<std::string> rest(all.begin() + 1, all.end());
        if (all[0] == "stub") return stub(rest);
        if (all[0] == "patch") return patch(rest);
        if (all[0] == "show") return show(rest);
        if (all[0] == "build" || all[0] == "run" || all[0] == "transplant" || all[0] == "fresh-memory")
            return steps(all[0], rest);
        if (all[0] == "mutants") {  // the search's variants (gradekit/mutants_command.cpp)
            try {
                return mutants_command(rest);
            } catch (const std::invalid_argument& e) {
                throw usage(e.what());
            }
        }
        throw usage(fmt::format("unknown command '{}' (stub, patch, show, build or run)", all[0]));
    } catch (const usage& e) {
        fmt::print(stderr, "headwise-gradetool: {}\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        fmt::print(stderr, "headwise-gradetool: {}\n", e.what());
        return 1;
    }
}
