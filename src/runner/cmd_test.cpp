// `headwise test` -- build and run the project's own test suite (ctest --preset default), quietly:
// on a terminal one progress line, rewritten in place; then each failing test in full (its ctest
// line and its output) and ctest's summary. The build's output goes to build/.test-build.log
// (shown when the build fails), ctest runs one test per CPU this process may use.
#include "common.hpp"

#include "gradekit/steps.hpp"
#include "headwise/fast/cpu_count.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <unistd.h>
#include <fstream>
#include <memory>
#include <regex>

namespace headwise::runner {

namespace {

// One line rewritten in place on a terminal; nothing when piped.
class ProgressLine {
public:
    void show(const std::string& line) {
        if (!tty_) return;
        fmt::print("\r\033[K  {}", line.size() > 100 ? line.substr(0, 97) + "..." : line);
        std::fflush(stdout);
        shown_ = true;
    }
    void clear() {
        if (shown_) fmt::print("\r\033[K");
        std::fflush(stdout);
        shown_ = false;
    }

private:
    bool tty_ = ::isatty(1) != 0;
    bool shown_ = false;
};

// `cd <source dir> && exec <args>`: the presets are found from the source directory.
std::vector<std::string> in_source_dir(std::vector<std::string> args) {
    args.insert(args.begin(), {"sh", "-c", "cd \"$0\" && exec \"$@\"", source_dir().string()});
    return args;
}

int build_tests() {
    const fs::path log_path = binary_dir() / ".test-build.log";
    fmt::print("headwise: building the test suite (log: {})\n", log_path.string());
    std::ofstream log(log_path);
    std::string errors;
    int warnings = 0;
    ProgressLine progress;
    const int rc = gradekit::run_captured(in_source_dir({"cmake", "--build", "--preset", "tests"}), {},
                                          [&](const std::string& line) {
                                              log << line << '\n';
                                              if (line.rfind("[", 0) == 0) {
                                                  progress.show(line);
                                              } else {
                                                  if (line.find("warning:") != std::string::npos) ++warnings;
                                                  errors += line + "\n";
                                              }
                                              return false;
                                          });
    progress.clear();
    if (rc != 0) {
        fmt::print(stderr, "{}headwise: the test suite does not build (full log: {})\n", errors, log_path.string());
        return rc;
    }
    if (warnings > 0)
        fmt::print("headwise: the build printed {} compiler warning{} (see {})\n", warnings, warnings == 1 ? "" : "s",
                   log_path.string());
    return 0;
}

// ctest's output without what a passing run needs no line for: the "Start" lines, the passed and
// skipped tests (the summary lists the skipped ones) and the time per label. A failing test's
// line and output, and the summary, pass through.
int run_tests(const std::vector<std::string>& extra) {
    const std::size_t jobs = fast::machine_threads();
    fmt::print("headwise: running the test suite, {} test{} at a time (ctest --preset default)\n", jobs,
               jobs == 1 ? "" : "s");
    std::vector<std::string> args{"ctest", "--preset", "default", "-j", std::to_string(jobs)};
    args.insert(args.end(), extra.begin(), extra.end());
    static const std::regex started(R"(^\s*Start\s+\d+: )");
    static const std::regex finished(R"(^\s*(\d+/\d+) Test\s+#\d+: (.*?) \.*\s*(Passed|\*\*\*Skipped)\s.*)");
    ProgressLine progress;
    bool in_label_times = false;
    const int rc = gradekit::run_captured(in_source_dir(args), {}, [&](const std::string& line) {
        std::smatch m;
        if (std::regex_search(line, started) || line.rfind("Test project ", 0) == 0) return false;
        if (std::regex_match(line, m, finished)) {
            progress.show(fmt::format("[{}] {}", m[1].str(), m[2].str()));
            return false;
        }
        if (line.rfind("Label Time Summary:", 0) == 0) in_label_times = true;
        if (in_label_times) {
            in_label_times = !line.empty();
            return false;
        }
        progress.clear();
        fmt::print("{}\n", line);
        return false;
    });
    progress.clear();
    return rc;
}

}  // namespace

void add_test_command(CLI::App& app, Action& action) {
    auto extra = std::make_shared<std::vector<std::string>>();
    auto* cmd = app.add_subcommand("test", "build and run the project's own test suite (ctest)");
    cmd->add_option("ctest-args", *extra, "extra ctest arguments (after --), e.g. -- -R softmax");
    cmd->callback([&action, extra] {
        action = [extra] {
            if (const int rc = build_tests(); rc != 0) return rc;
            return run_tests(*extra);
        };
    });
}

}  // namespace headwise::runner
