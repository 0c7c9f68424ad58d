// headwise/base/cli.hpp -- command-line handling shared by every lesson and tool.
//
// The contract for bad input: exactly one line on stderr that names the flag and what it
// accepts, and exit code 2. Never a crash, never a stack trace, never a NaN table.
#pragma once

#include "headwise/base/tensor.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

// CLI11's App, named here and included only where a command line is built (cli.cpp, the runner,
// the lesson runtime): its header costs each file that includes it ~3 s of compiling.
namespace CLI {
class App;
}  // namespace CLI

namespace headwise::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;  // the program found something wrong (e.g. a check failed)
inline constexpr int exit_usage = 2;    // the input was wrong

// Options every lesson accepts.
struct LessonOptions {
    Dims dims;
    std::uint64_t seed = 0;
    bool quiet = false;  // no shape lines (used when timing)
};

// Adds --batch --seq --d-model --heads --seed (each only if its flag name is listed in `which`,
// e.g. "batch,seq,d-model,seed"), with ranges that keep every tensor printable and in memory.
void add_lesson_options(CLI::App& app, LessonOptions& options, std::string_view which);

// Parses argv. Returns -1 when the program should go on, otherwise the exit code to return
// (0 after --help, 2 after an error, which has already been printed as one line).
int parse(CLI::App& app, int argc, char** argv);

// Runs `body`, turning usage_error into one line + exit 2 and any other exception into one
// line + exit 1. Lessons reach it through lesson::run (lesson.hpp).
int guard(std::string_view program, const std::function<int()>& body);

// Throws usage_error when `bytes` is more than this machine's available memory allows.
void require_memory(std::size_t bytes, std::string_view what);

// Product of sizes, throwing usage_error instead of overflowing.
std::size_t checked_product(std::initializer_list<std::size_t> sizes, std::string_view what);

// No NaN or Inf in p[0, n): one branch-free pass the compiler vectorises (the place of the first
// bad value, when there is one, is for the caller to look for).
bool all_finite(const float* p, std::size_t n);

// d_model must split evenly into heads: otherwise a usage_error that prints the would-be d_head.
void require_divisible(std::size_t d_model, std::size_t heads);

}  // namespace headwise::cli
