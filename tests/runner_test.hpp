// tests/runner_test.hpp -- run the real `headwise` binary from a test: arguments, environment
// and stdin in; exit code, stdout and stderr out. Used by runner_test.cpp and attend_test.cpp.
//
// The binary's path comes from the build (HEADWISE_RUNNER_EXE). Output goes through files, not
// pipes, so a chatty child can never block; a child that runs too long is killed (and the test
// then fails on its exit code instead of hanging ctest).
#pragma once

#include "temp_dir.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace headwise::test {

namespace fs = std::filesystem;

// A one-exercise course for the runner tests: exercise 01's solution with its markers, and the
// stub the stub generator (src/gradekit/stub.hpp) derives from it, written out by hand.
inline const std::string alpha_solution = R"(// alpha.cpp -- exercise 01
int answer() {
    // BEGIN SOLUTION
    return 42;  // the secret answer
    // STUB
    // TODO(ex01): return the answer
    return 0;
    // END SOLUTION
}
)";
inline const std::string alpha_stub = R"(// alpha.cpp -- exercise 01
int answer() {
    // TODO(ex01): return the answer
    return 0;
}
)";

inline std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();  // one bulk copy: a char-at-a-time iterator crawls in a Debug + ASan build
    return std::move(text).str();
}

inline void write_text(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

struct Result {
    int code = -1;  // exit code, or 128 + signal
    std::string out, err;
    // stderr as lines (without the trailing newline)
    std::size_t err_lines() const {
        std::size_t n = 0;
        for (char c : err) n += c == '\n';
        return n + (!err.empty() && err.back() != '\n');
    }
};

using Env = std::map<std::string, std::string>;

// What points the runner at a sandbox: its source and build trees, and a data folder and a home of
// its own (so nothing of the real user's progress is read or written).
inline Env sandbox_env(const fs::path& src, const fs::path& build, const fs::path& data, const fs::path& home) {
    return {{"HEADWISE_SOURCE_DIR", src.string()},
            {"HEADWISE_BINARY_DIR", build.string()},
            {"XDG_DATA_HOME", data.string()},
            {"HOME", home.string()}};
}

// A started headwise process whose output goes to files in `dir`.
class Process {
public:
    // `program` defaults to the runner; other tests start a lesson or any binary the same way.
    Process(const std::vector<std::string>& args, const Env& env, const fs::path& dir,
            const std::optional<std::string>& input, const std::string& program = HEADWISE_RUNNER_EXE)
        : out_(dir / "stdout"), err_(dir / "stderr") {
        const fs::path in = dir / "stdin";
        if (input) write_text(in, *input);
        pid_ = fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            const int fin = ::open(input ? in.c_str() : "/dev/null", O_RDONLY);
            const int fout = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            const int ferr = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fin < 0 || fout < 0 || ferr < 0) _exit(126);
            dup2(fin, 0);
            dup2(fout, 1);
            dup2(ferr, 2);
            setpgid(0, 0);  // its own process group: a signal to it reaches its children too
            for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
            std::vector<std::string> all{program};
            all.insert(all.end(), args.begin(), args.end());
            std::vector<char*> argv;
            for (auto& a : all) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            _exit(127);
        }
    }
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;
    ~Process() {
        if (pid_ > 0) {
            ::kill(-pid_, SIGKILL);
            int status = 0;
            waitpid(pid_, &status, 0);
        }
    }

    // Sends `sig` to the process group (as a terminal's Ctrl-C does).
    void signal(int sig) const { ::kill(-pid_, sig); }

    // Waits for the exit; after `timeout` the process is killed (exit code 128 + SIGKILL).
    Result wait(std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        int status = 0;
        // Polled from 0.2 ms, doubling up to 20 ms: most programs here exit within a few ms, and a
        // test asleep holds one of ctest's parallel slots with its CPU idle (a fixed 20 ms poll
        // was half of the bad-input catalogue's 20 s).
        auto pause = std::chrono::microseconds(200);
        for (;;) {
            const pid_t r = waitpid(pid_, &status, WNOHANG);
            if (r == pid_) break;
            if (std::chrono::steady_clock::now() > deadline) {
                ::kill(-pid_, SIGKILL);
                waitpid(pid_, &status, 0);
                break;
            }
            std::this_thread::sleep_for(pause);
            pause = std::min(2 * pause, std::chrono::microseconds(20000));
        }
        pid_ = -1;
        Result r;
        r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
        r.out = read_text(out_);
        r.err = read_text(err_);
        return r;
    }

    std::string output_so_far() const { return read_text(out_); }

private:
    fs::path out_, err_;
    pid_t pid_ = -1;
};

// Runs headwise to completion. `input` is its stdin (std::nullopt: /dev/null, i.e. EOF at once).
inline Result run_headwise(const std::vector<std::string>& args, const Env& env = {},
                           const std::optional<std::string>& input = std::nullopt) {
    TempDir io;
    Process p(args, env, io.path, input);
    return p.wait();
}

}  // namespace headwise::test
