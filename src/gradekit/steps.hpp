// gradekit/steps.hpp -- the two steps of grading one exercise, shared by ctest (through
// headwise-gradetool, the grade and meta tests) and the runner (`headwise grade`, `watch`):
//
//   build  builds the exercise's grader (its one target). When the learner's file does not
//          compile, the report says so with the compiler's first error whole (file:line:col,
//          message, source line and caret). The learner's own warnings are kept for the report.
//   run    runs the grader under AddressSanitizer/UBSan (grade builds are sanitized: see
//          cmake/HeadwiseExercises.cmake) and completes its report: a sanitizer report, a crash
//          or an abort becomes one failure saying what happened, at which line of the learner's
//          file, and where the lesson explains it (the facts and their words: sanitizer.hpp).
#pragma once

#include "gradekit/report.hpp"

#include <sys/types.h>

#include <filesystem>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace headwise::gradekit {

namespace fs = std::filesystem;

struct Subject {
    std::string id;               // "ex03"
    fs::path source_dir;          // the repository: paths in messages are relative to it
    std::vector<fs::path> files;  // the learner's (or the meta-test's subject's) source files
    fs::path report;              // build/grade/ex03.json
};

// In a child after fork(): becomes `args` (PATH searched), or prints "<prefix>cannot start ARG0:
// why" on stderr and exits 127.
[[noreturn]] void exec_or_exit(const std::vector<std::string>& args, const char* prefix);

// Waits for the child `pid` (again when a signal interrupts the wait). Returns its exit code, or
// 128 + the signal that ended it.
int wait_exit_code(pid_t pid);

// Runs `args` (PATH searched) with `env` added, feeding each line of its merged stdout and stderr
// to `on_line`; when it returns true the program is stopped (SIGKILL). After `timeout_s` seconds
// (0: none) it gets SIGABRT (a sanitized program prints its stack), SIGKILL 5 s later. Returns its
// exit code, or 128 + the signal that ended it. `child` (may be null) holds the program's pid while
// it runs (0 before and after): another thread may stop it (the repair's compile begun in advance).
int run_captured(const std::vector<std::string>& args, const std::vector<std::string>& env,
                 const std::function<bool(const std::string&)>& on_line, int timeout_s = 0,
                 std::atomic<int>* child = nullptr);

// The grader's ASAN_OPTIONS ("ASAN_OPTIONS=..."): fresh heap memory filled with `fill_byte` (190,
// 0xbe, in a grade: a float made of it reads -1.69474e+38, easy to recognise).
std::string asan_options(int fill_byte);

// `cmake --build <build_dir> --target <target>`. `progress` (may be empty) receives ninja's
// "[k/n] ..." lines. Returns true when it built; otherwise writes the report.
bool build_step(const Subject& s, const fs::path& build_dir, const std::string& target,
                const std::function<void(const std::string&)>& progress);

// Runs the grader; `echo` (may be empty) receives its output lines. A grader still running after
// `timeout_s` seconds is stopped and reported as an endless loop at the learner's line where it
// was. `extra_env` ("NAME=value") is added to its environment. Returns its exit code (0: every
// test passed).
int run_step(const Subject& s, const fs::path& grader, const std::vector<std::string>& extra_args,
             const std::function<void(const std::string&)>& echo, int timeout_s = 90,
             const std::vector<std::string>& extra_env = {});

// The subject's file that `path` (as a compiler, sanitizer or symboliser printed it) names, or
// empty; is_subject_file: whether it names one; subject_relative: that file relative to the
// repository (`path` itself when it names none).
fs::path subject_file_of(const std::string& path, const Subject& s);
bool is_subject_file(const std::string& path, const Subject& s);
std::string subject_relative(const std::string& path, const Subject& s);

// Line `line` (1-based) of `file`, without its indentation; empty when unreadable.
std::string source_line(const fs::path& file, int line);

// `text` with every `from` replaced by `to` (an empty `from` replaces nothing).
std::string replace_all(std::string text, const std::string& from, const std::string& to);

// What a compiler's output says about the subject's files (exposed for tests).
struct CompilerOutput {
    std::string first_error;            // whole: location, message, source line, caret
    std::vector<std::string> warnings;  // the subject's own, each whole, once
};
CompilerOutput parse_compiler_output(const std::string& log, const Subject& s);

// A crashed grader's output (sanitizer report, signal) as one failure (exposed for tests).
// `timed_out`: it was stopped after its time limit.
Failure diagnose_crash(const std::string& output, int exit_code, const Subject& s, bool timed_out = false);

}  // namespace headwise::gradekit
