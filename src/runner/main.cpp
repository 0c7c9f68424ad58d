// headwise -- the learner's runner: `./headwise <command>`.
//
// It knows the course order from course.json (data, not code), runs lessons, and runs the
// project's own test suite. It never includes xtensor: it only starts other programs.

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr int exit_usage = 2;

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

const fs::path source_dir = HEADWISE_SOURCE_DIR;
const fs::path binary_dir = HEADWISE_BINARY_DIR;

struct Lesson {
    int number;
    std::string name;
    std::string title;
};

std::vector<Lesson> load_course() {
    const fs::path file = source_dir / "course.json";
    std::ifstream in(file);
    if (!in) throw std::runtime_error(fmt::format("cannot read the course catalogue {}", file.string()));
    const auto j = nlohmann::json::parse(in);
    std::vector<Lesson> lessons;
    for (const auto& l : j.at("lessons")) {
        lessons.push_back({l.at("number").get<int>(), l.at("name").get<std::string>(), l.at("title").get<std::string>()});
    }
    return lessons;
}

// Runs argv[0] with argv, waits, returns its exit code (128 + signal if it was killed).
int run_program(const std::vector<std::string>& args, const fs::path& cwd = {}) {
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
    if (pid == 0) {
        if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "headwise: cannot start %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) throw std::runtime_error("waitpid failed");
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

const Lesson& find_lesson(const std::vector<Lesson>& course, const std::string& which) {
    int n = 0;
    try {
        std::size_t used = 0;
        n = std::stoi(which, &used);
        if (used != which.size()) throw std::invalid_argument(which);
    } catch (const std::exception&) {
        n = -1;
    }
    for (const auto& l : course)
        if (l.number == n || l.name == which) return l;
    std::string known;
    for (const auto& l : course) known += fmt::format("{}{}", known.empty() ? "" : ", ", l.number);
    throw usage_error(fmt::format("run: no lesson '{}' (the lessons are {}, or 'all')", which, known));
}

int run_lesson(const Lesson& l, const std::vector<std::string>& extra) {
    std::vector<std::string> args{(binary_dir / "lessons" / l.name).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_program(args);
}

int cmd_run(const std::string& which, const std::vector<std::string>& extra) {
    const auto course = load_course();
    if (which != "all") return run_lesson(find_lesson(course, which), extra);
    for (const auto& l : course) {
        const std::string banner = fmt::format(" lesson {:02} -- {} ", l.number, l.title);
        fmt::print("\n{:=^96}\n", banner);
        const int rc = run_lesson(l, extra);
        if (rc != 0) {
            fmt::print(stderr, "headwise: lesson {:02} ({}) exited with code {}; stopping here.\n", l.number, l.name, rc);
            return rc;
        }
    }
    fmt::print("\n{:=^96}\n", fmt::format(" all {} lessons ran ", course.size()));
    return 0;
}

int cmd_test(const std::vector<std::string>& extra) {
    fmt::print("headwise: building the test suite\n");
    if (const int rc = run_program({"cmake", "--build", "--preset", "tests"}, source_dir); rc != 0) return rc;
    std::vector<std::string> args{"ctest", "--preset", "default"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_program(args, source_dir);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"headwise: multi-head self-attention, step by step.\n"
                 "Start with `./headwise run all`, then read docs/ and edit exercises/.",
                 "headwise"};
    app.require_subcommand(1);

    std::string which;
    std::vector<std::string> extra;
    auto* run = app.add_subcommand("run", "run lesson N (1, 2, ...) or all lessons in order");
    run->add_option("lesson", which, "lesson number, name, or 'all'")->required();
    run->add_option("args", extra, "flags passed to the lesson (after --), e.g. -- --seq 8");

    std::vector<std::string> test_extra;
    auto* test = app.add_subcommand("test", "build and run the project's own test suite (ctest)");
    test->add_option("ctest-args", test_extra, "extra ctest arguments (after --), e.g. -- -R softmax");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::string msg = e.what();
        for (char& c : msg)
            if (c == '\n') c = ' ';
        fmt::print(stderr, "headwise: {} (see ./headwise --help)\n", msg);
        return exit_usage;
    }

    try {
        if (*run) return cmd_run(which, extra);
        if (*test) return cmd_test(test_extra);
    } catch (const usage_error& e) {
        fmt::print(stderr, "headwise: {}\n", e.what());
        return exit_usage;
    } catch (const std::exception& e) {
        fmt::print(stderr, "headwise: error: {}\n", e.what());
        return 1;
    }
    return 0;
}
