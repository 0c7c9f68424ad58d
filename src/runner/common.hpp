// runner/common.hpp -- what every `headwise` command shares: paths, the course catalogue,
// starting programs, and the error type for bad input (one line, exit 2).
//
// Each command lives in its own cmd_<name>.cpp and registers itself with add_<name>_command();
// main.cpp only lists them. The runner never includes xtensor: it starts other programs.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

// CLI11's App, named here: each command's registration includes CLI11 itself, compiled in the runner's
// unity batches and never in the files that compute (cmd_attend.cpp, cmd_heads.cpp, cmd_train.cpp,
// cmd_generate.cpp: ~3 s of compiling each).
namespace CLI {
class App;
}  // namespace CLI

namespace headwise::runner {

namespace fs = std::filesystem;

inline constexpr int exit_usage = 2;

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The repository and the build tree this runner was built from.
fs::path source_dir();
fs::path binary_dir();

// One entry of course.json.
struct Exercise {
    std::string id;                  // "ex01" (also the ctest label)
    std::string dir;                 // "01_softmax_attention" under exercises/ and solutions/
    std::vector<std::string> files;  // the files a learner edits, relative to that directory
    std::string hints;               // "exercises/01_topic/HINTS.md" (## Hint 1, ## Hint 2, ...) or empty
};
struct Lesson {
    int number = 0;
    std::string name;  // "01_single_head": lessons/<name>.cpp, build/lessons/<name>
    std::string title;
    std::string doc;  // docs/<name>.md
    std::optional<Exercise> exercise;
    bool needs_model = false;  // runs a trained model the cache may lack: exit 2 then means "not fetched"
};

std::vector<Lesson> load_course();
// Finds a lesson by number ("3", "03") or name; usage_error listing the valid ones otherwise.
const Lesson& find_lesson(const std::vector<Lesson>& course, const std::string& which);

// Runs args[0] with args (PATH is searched), waits, returns its exit code (128 + signal if killed).
int run_program(const std::vector<std::string>& args, const fs::path& cwd = {});

// The action the parsed command line selected; set by a subcommand's callback.
using Action = std::function<int()>;

void add_run_command(CLI::App& app, Action& action);
void add_test_command(CLI::App& app, Action& action);
void add_bench_command(CLI::App& app, Action& action);
void add_attend_command(CLI::App& app, Action& action);
void add_list_command(CLI::App& app, Action& action);
void add_hint_command(CLI::App& app, Action& action);
void add_watch_command(CLI::App& app, Action& action);
void add_reset_command(CLI::App& app, Action& action);
void add_solution_command(CLI::App& app, Action& action);
void add_grade_command(CLI::App& app, Action& action);
void add_figures_command(CLI::App& app, Action& action);
void add_heads_command(CLI::App& app, Action& action);
void add_train_command(CLI::App& app, Action& action);
void add_generate_command(CLI::App& app, Action& action);

}  // namespace headwise::runner
