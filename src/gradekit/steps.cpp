// gradekit/steps.cpp -- see steps.hpp.
#include "gradekit/steps.hpp"

#include "gradekit/sanitizer.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace headwise::gradekit {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(line);
    }
    return lines;
}

// `path` relative to the repository when it lies inside it.
std::string relative(const std::string& path, const fs::path& source_dir) {
    const std::string root = source_dir.string() + "/";
    if (path.rfind(root, 0) == 0) return path.substr(root.size());
    return path;
}

// GCC's source excerpt under a diagnostic: "   25 |     return x" and "      |          ^".
bool is_excerpt(const std::string& line) {
    static const std::regex excerpt(R"(^ +[0-9]* \|.*)");
    return std::regex_match(line, excerpt);
}

// How many lines of the first error (its excerpt and notes) the report shows.
constexpr std::size_t max_error_lines = 40;

// Types as the learner wrote them: gcc names a type by the library's alias and adds what it is,
// "'xt::uvector<float>::value_type&' {aka 'float&'}"; only the second reads as the code does.
std::string as_written(const std::string& text) {
    static const std::regex aka(R"('[^']*' \{aka ('[^']*')\})");
    return std::regex_replace(text, aka, "$1");
}

fs::path sidecar_of(const fs::path& report) { return report.string() + ".warnings"; }

}  // namespace

// The subject's file that `path` (as a compiler, sanitizer or symboliser printed it) names, or
// empty. A relative path may be relative to the build directory (ccache's base_dir rewrites the
// compiler's paths so): it names a subject file that ends with it, "../" and "./" aside.
fs::path subject_file_of(const std::string& path, const Subject& s) {
    std::error_code ec;
    std::string_view tail = path;
    while (tail.starts_with("../") || tail.starts_with("./")) tail.remove_prefix(tail.starts_with("./") ? 2 : 3);
    for (const fs::path& f : s.files) {
        if (path == f.string() || path == relative(f.string(), s.source_dir)) return f;
        if (fs::equivalent(fs::path(path).is_absolute() ? fs::path(path) : s.source_dir / path, f, ec)) return f;
        const std::string name = f.string();  // ends with "/" + tail
        if (!fs::path(path).is_absolute() && !tail.empty() && name.size() > tail.size() && name.ends_with(tail) &&
            name[name.size() - tail.size() - 1] == '/')
            return f;
    }
    return {};
}

bool is_subject_file(const std::string& path, const Subject& s) { return !subject_file_of(path, s).empty(); }

// `path` of a subject file, relative to the repository.
std::string subject_relative(const std::string& path, const Subject& s) {
    const fs::path f = subject_file_of(path, s);
    return relative(f.empty() ? path : f.string(), s.source_dir);
}

// Line `line` (1-based) of `file`, without its indentation; empty when unreadable.
std::string source_line(const fs::path& file, int line) {
    std::ifstream in(file);
    std::string text;
    for (int i = 0; i < line && std::getline(in, text); ++i) {}
    if (!in) return {};
    const auto first = text.find_first_not_of(" \t");
    return first == std::string::npos ? std::string() : text.substr(first);
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    if (from.empty()) return text;
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

void exec_or_exit(const std::vector<std::string>& args, const char* prefix) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "%scannot start %s: %s\n", prefix, argv[0], std::strerror(errno));
    _exit(127);
}

int wait_exit_code(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) throw std::runtime_error("waitpid failed");
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

int run_captured(const std::vector<std::string>& args, const std::vector<std::string>& env,
                 const std::function<bool(const std::string&)>& on_line, int timeout_s, std::atomic<int>* child) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe failed: {}", std::strerror(errno)));
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
    if (pid == 0) {
        ::close(fds[0]);
        ::dup2(fds[1], 1);
        ::dup2(fds[1], 2);
        ::close(fds[1]);
        for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
        exec_or_exit(args, "");
    }
    ::close(fds[1]);
    if (child != nullptr) child->store(pid);
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    int signals_sent = 0;
    bool stopped = false;
    std::string pending;
    char buffer[8192];
    for (;;) {
        pollfd p{fds[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, 500);
        if (ready < 0 && errno != EINTR) break;
        if (timeout_s > 0 && !stopped) {
            const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(clock::now() - start).count();
            if (signals_sent == 0 && elapsed >= timeout_s) {
                ::kill(pid, SIGABRT);  // a sanitized program prints where it was
                signals_sent = 1;
            } else if (signals_sent == 1 && elapsed >= timeout_s + 5) {
                ::kill(pid, SIGKILL);
                signals_sent = 2;
            }
        }
        if (ready <= 0) continue;
        const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        pending.append(buffer, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
            const std::string line = pending.substr(0, nl);
            pending.erase(0, nl + 1);
            if (!stopped && on_line && on_line(line)) {
                ::kill(pid, SIGKILL);
                stopped = true;
            }
        }
    }
    if (!pending.empty() && on_line && !stopped) on_line(pending);
    ::close(fds[0]);
    if (child != nullptr) child->store(0);
    return wait_exit_code(pid);
}

CompilerOutput parse_compiler_output(const std::string& log, const Subject& s) {
    static const std::regex diagnostic(R"(^(\S+?):([0-9]+):([0-9]+): (fatal error|error|warning): (.*)$)");
    static const std::regex required_from(R"(^(\S+?):([0-9]+):([0-9]+):   required from here$)");
    const std::vector<std::string> lines = lines_of(log);
    const std::string root = s.source_dir.string() + "/";
    auto whole = [&](std::size_t i) {  // the diagnostic at line i, with its excerpt and its notes
        static const std::regex note(R"(^\S+?:[0-9]+:[0-9]+: note: .*$)");
        std::string text = replace_all(lines[i], root, "");
        std::size_t j = i + 1, shown = 1;
        for (; j < lines.size() && (is_excerpt(lines[j]) || std::regex_match(lines[j], note)); ++j)
            if (shown++ < max_error_lines) text += "\n" + replace_all(lines[j], root, "");
        if (shown > max_error_lines)
            text += fmt::format("\n({} more lines of notes: ./headwise grade N -v shows the whole build output)",
                                shown - max_error_lines);
        return as_written(text);
    };
    CompilerOutput out;
    std::set<std::string> seen;
    std::size_t first_any = lines.size(), first_mine = lines.size();
    std::string required_here;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        std::smatch m;
        if (std::regex_match(lines[i], m, diagnostic)) {
            const bool mine = is_subject_file(m[1].str(), s);
            if (m[4] == "warning") {
                if (mine && seen.insert(replace_all(lines[i], root, "")).second) out.warnings.push_back(whole(i));
            } else {
                if (first_any == lines.size()) first_any = i;
                if (mine && first_mine == lines.size()) first_mine = i;
            }
        } else if (required_here.empty() && std::regex_match(lines[i], m, required_from) &&
                   is_subject_file(m[1].str(), s)) {
            required_here = fmt::format(
                "{}:{}:{}: the call in your file that led there:\n    {}", subject_relative(m[1].str(), s), m[2].str(),
                m[3].str(), source_line(s.source_dir / subject_relative(m[1].str(), s), std::stoi(m[2].str())));
        } else if (first_any == lines.size() && (lines[i].find("undefined reference to") != std::string::npos ||
                                                 lines[i].find("multiple definition of") != std::string::npos)) {
            first_any = i;
        }
    }
    if (first_mine < lines.size()) {
        out.first_error = whole(first_mine);
    } else if (first_any < lines.size()) {
        out.first_error = whole(first_any);
        if (!required_here.empty()) out.first_error += "\n" + required_here;
    }
    return out;
}

bool build_step(const Subject& s, const fs::path& build_dir, const std::string& target,
                const std::function<void(const std::string&)>& progress) {
    std::string log;
    bool recompiled = false;
    const int rc =
        run_captured({"cmake", "--build", build_dir.string(), "--target", target}, {}, [&](const std::string& line) {
            log += line + "\n";
            if (line.rfind("[", 0) == 0) {
                for (const fs::path& f : s.files)
                    if (line.find(f.filename().string() + ".o") != std::string::npos) recompiled = true;
                if (progress) progress(line);
            }
            return false;
        });
    const CompilerOutput parsed = parse_compiler_output(log, s);
    if (rc == 0) {
        // The warnings of the last compile of the learner's file, kept for the report of every
        // run until the file compiles again (a no-op build prints none).
        if (recompiled) {
            Report w;
            w.id = s.id;
            w.warnings = parsed.warnings;
            write_report(sidecar_of(s.report), w);
        }
        return true;
    }
    Report r;
    r.id = s.id;
    r.compiled = false;
    r.finished = true;
    Failure f;
    f.test = "(build)";
    f.message = parsed.first_error.empty() ? "the build failed (no compiler error found in its output; see below)"
                                           : parsed.first_error;
    f.details = lines_of(replace_all(log, s.source_dir.string() + "/", ""));
    if (f.details.size() > 200) f.details.resize(200);
    r.failures.push_back(std::move(f));
    r.warnings = parsed.warnings;
    write_report(s.report, r);
    return false;
}

namespace {

// The sanitizer's own report, for -v.
std::vector<std::string> sanitizer_report(const std::vector<std::string>& lines, const Subject& s) {
    std::vector<std::string> details;
    bool in_report = false;
    for (const std::string& line : lines) {
        if (line.find("==ERROR:") != std::string::npos || line.find("runtime error:") != std::string::npos)
            in_report = true;
        if (in_report && details.size() < 60) {
            std::string shown = replace_all(line, s.source_dir.string() + "/", "");
            if (shown.size() > 240) shown = shown.substr(0, 200) + " ... " + shown.substr(shown.size() - 35);
            details.push_back(shown);
        }
    }
    return details;
}

}  // namespace

Failure diagnose_crash(const std::string& output, int exit_code, const Subject& s, bool timed_out) {
    const std::vector<std::string> lines = lines_of(output);
    const CrashFacts c = read_crash(lines, s);
    Failure f;
    f.test = c.test;
    const CrashSentence said = crash_sentence(c, exit_code, timed_out);
    std::string what = said.what;
    f.lesson = said.lesson;
    if (output.find("/xtensor/xreducer.hpp") != std::string::npos && !c.kind.empty()) {
        what +=
            " (inside an xtensor reduction such as xt::sum(..., xt::keep_dims) used inside a lazy expression: "
            "xtensor 0.24 then reads past the buffer; evaluate the reduction into a tensor first)";
    }
    // Inside a kernel, the concept to reread is the kernel's (indices from threadIdx and blockIdx,
    // per-thread arrays), not xtensor's.
    if (c.in_kernel && (!c.kind.empty() || !c.ub.empty()))
        f.lesson = "docs/06_cuda_kernel.md, \"Pitfalls, with the lesson's numbers\"";
    if (!c.check.empty()) what += " -- while checking " + c.check;
    if (!c.where_file.empty()) {
        f.where = c.where_col > 0 ? fmt::format("{}:{}:{}", c.where_file, c.where_line, c.where_col)
                                  : fmt::format("{}:{}", c.where_file, c.where_line);
        f.source = source_line(s.source_dir / c.where_file, c.where_line);
        f.message = fmt::format("{}: {}", f.where, what);
    } else {
        f.message = what + (c.kind.empty() && c.ub.empty() ? std::string()
                                                           : " (not in your file: see the stack in the details)");
    }
    if (f.test.empty()) f.test = "(the grader itself)";
    f.details = sanitizer_report(lines, s);
    return f;
}

std::string asan_options(int fill_byte) {
    return fmt::format(
        "ASAN_OPTIONS=detect_leaks=0:halt_on_error=0:abort_on_error=0:handle_abort=1:detect_stack_use_after_return=1:"
        "max_malloc_fill_size=1073741824:malloc_fill_byte={}:allocator_may_return_null=1:print_summary=1",
        fill_byte);
}

int run_step(const Subject& s, const fs::path& grader, const std::vector<std::string>& extra_args,
             const std::function<void(const std::string&)>& echo, int timeout_s,
             const std::vector<std::string>& extra_env) {
    std::error_code ec;
    fs::remove(s.report, ec);
    std::string subject_files;
    for (const fs::path& f : s.files) subject_files += (subject_files.empty() ? "" : ";") + f.string();
    std::vector<std::string> env = {
        "HEADWISE_GRADE_ID=" + s.id,
        "HEADWISE_GRADE_REPORT=" + s.report.string(),
        "HEADWISE_GRADE_SOURCE_DIR=" + s.source_dir.string(),
        "HEADWISE_GRADE_SUBJECT=" + subject_files,
        "HEADWISE_GRADE_TRACE=1",
        asan_options(190),
        "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1",
    };
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<std::string> args{grader.string()};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    // AddressSanitizer runs in recover mode (grade builds compile with -fsanitize-recover=address):
    // each report is read here as it arrives, and the first one stops the grader at once.
    std::string output;
    bool stop = false;
    const auto started = std::chrono::steady_clock::now();
    const int rc = run_captured(
        args, env,
        [&](const std::string& line) {
            output += line + "\n";
            if (echo && line.rfind("[headwise-check] ", 0) != 0) echo(line);
            if (line.rfind("SUMMARY: AddressSanitizer", 0) == 0) {
                stop = true;
                return true;
            }
            return false;
        },
        timeout_s);
    // Stopped by the time limit (its SIGABRT makes the sanitizer print where it was, a report too).
    const bool timed_out =
        timeout_s > 0 && rc != 0 && std::chrono::steady_clock::now() - started >= std::chrono::seconds(timeout_s);

    Report r;
    if (auto written = read_report(s.report)) {
        r = std::move(*written);
    } else {
        r.id = s.id;
        r.compiled = true;
    }
    if (!r.finished || stop) {
        r.finished = false;
        Failure f = diagnose_crash(output, rc, s, timed_out);
        if (!r.running.empty() && f.test == "(the grader itself)") f.test = r.running;
        const int not_run = r.total - r.passed - static_cast<int>(r.failures.size()) - 1;
        if (not_run > 0)
            f.message +=
                fmt::format(" [the grader stopped here: {} more test{} did not run]", not_run, not_run == 1 ? "" : "s");
        r.failures.push_back(std::move(f));
        r.running.clear();
    }
    if (auto w = read_report(sidecar_of(s.report))) r.warnings = w->warnings;
    write_report(s.report, r);
    return rc == 0 && r.all_passed() ? 0 : (rc == 0 ? 1 : rc);
}

}  // namespace headwise::gradekit
