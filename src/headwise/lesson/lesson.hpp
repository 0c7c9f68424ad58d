// headwise/lesson/lesson.hpp -- everything a lesson file includes, in one line, and the lesson runtime.
#pragma once

#include "headwise/reference/attention.hpp"
#include "headwise/base/cli.hpp"
#include "headwise/base/random.hpp"
#include "headwise/reference/softmax.hpp"
#include "headwise/base/tensor.hpp"
#include "headwise/base/trace.hpp"

#include <fmt/format.h>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class Option;
}  // namespace CLI

namespace headwise::lesson {

// About a few seconds of work on a 2-core laptop: more than any lesson needs at sizes worth
// printing, little enough that a typo ends in one line instead of a wait.
inline constexpr double work_limit = 2e11;

class Option;

// A lesson's command line: CLI11's App, built and parsed in lesson_runtime.cpp. CLI11's header costs
// each file that includes it ~3 s of compiling, and a lesson needs only these few calls, each
// CLI11's own name for what it does.
class App {
public:
    App(const std::string& description, const std::string& name);
    ~App();
    App(const App&) = delete;
    App& operator=(const App&) = delete;

    Option* add_option(const std::string& flag, std::string& value, const std::string& help);
    Option* add_option(const std::string& flag, int& value, const std::string& help);
    Option* add_option(const std::string& flag, std::size_t& value, const std::string& help);
    void add_flag(const std::string& flag, bool& value, const std::string& help);
    std::size_t count(const std::string& flag) const;  // how many times the command line gave it

    operator CLI::App&();  // for cli::add_lesson_options and run()

private:
    std::unique_ptr<CLI::App> app_;
    std::vector<std::unique_ptr<Option>> options_;
};

// One flag App::add_option added, to say more about it (each call returns it again, to chain).
class Option {
public:
    explicit Option(CLI::Option* option) : option_(option) {}
    Option* type_name(const std::string& name);             // what --help shows for its value
    Option* capture_default_str();                          // --help shows its default
    Option* check_range(long long lo, long long hi);        // a number in [lo, hi], or exit 2
    Option* check_member(const std::vector<int>& allowed);  // one of these, or exit 2
    Option* check_member(const std::vector<std::string>& allowed);

private:
    CLI::Option* option_;
};

// Every lesson's main() ends with `return lesson::run(app, argc, argv, [&] { ...story... });`.
// This is the one place outside the story that
//   - parses the flags (a bad one: one line naming it, exit 2; --help: exit 0),
//   - sets the limits: memory (half of what is free, charged per allocation as it is made) and
//     work (each library step charges its operations before computing; see limits.hpp),
//   - turns a usage_error or a refused limit into one line and exit 2, anything else into one
//     line and exit 1.
// The story returns the exit code (0, or cli::exit_failure when a check it prints fails).
int run(CLI::App& app, int argc, char** argv, const std::function<int()>& story);

// The two shapes of flag a lesson adds beyond cli::add_lesson_options, one line each in main():
// a number that must lie in [lo, hi] (its default shown in --help; a value outside is refused by
// run() with one line and exit 2) ... (made in lesson_runtime.cpp for the types lessons use: a
// std::size_t or int bounded by ints, a float by floats, a std::uint64_t by unsigned)
template <class T, class Bound>
void add_bounded_option(CLI::App& app, const std::string& flag, T& value, const std::string& help, Bound lo, Bound hi);

// ... and --save-figures DIR, "also draw `what` into DIR".
void add_save_figures(CLI::App& app, std::string& dir, const std::string& what);

// A multi-line block (a heat map) printed indented under the lesson's text.
void print_indented(const std::string& block);

// Bytes the lesson has allocated and not yet freed (what the memory limit is checked against).
std::size_t bytes_allocated();
// The most bytes_allocated() has been since the last reset_peak_bytes_allocated() (or the start):
// what a step needed at its fullest, whichever tensor made it.
std::size_t peak_bytes_allocated();
void reset_peak_bytes_allocated();
// run() sets half of the free memory; a test sets its own.
void set_memory_limit(std::size_t bytes);

}  // namespace headwise::lesson
