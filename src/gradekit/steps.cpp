// gradekit/steps.cpp -- see steps.hpp.
#include "gradekit/steps.hpp"

#include <fmt/format.h>

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

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    if (from.empty()) return text;
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

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

// GCC's source excerpt under a diagnostic: "   25 |     return x" and "      |          ^".
bool is_excerpt(const std::string& line) {
    static const std::regex excerpt(R"(^ +[0-9]* \|.*)");
    return std::regex_match(line, excerpt);
}

fs::path sidecar_of(const fs::path& report) { return report.string() + ".warnings"; }

}  // namespace

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
                 const std::function<bool(const std::string&)>& on_line, int timeout_s) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe failed: {}", std::strerror(errno)));
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
    return wait_exit_code(pid);
}

CompilerOutput parse_compiler_output(const std::string& log, const Subject& s) {
    static const std::regex diagnostic(R"(^(\S+?):([0-9]+):([0-9]+): (fatal error|error|warning): (.*)$)");
    static const std::regex required_from(R"(^(\S+?):([0-9]+):([0-9]+):   required from here$)");
    const std::vector<std::string> lines = lines_of(log);
    const std::string root = s.source_dir.string() + "/";
    auto whole = [&](std::size_t i) {  // the diagnostic at line i, with its excerpt
        std::string text = replace_all(lines[i], root, "");
        for (std::size_t j = i + 1; j < lines.size() && is_excerpt(lines[j]); ++j) text += "\n" + lines[j];
        return text;
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

Failure diagnose_crash(const std::string& output, int exit_code, const Subject& s, bool timed_out) {
    static const std::regex asan_error(R"(==[0-9]+==ERROR: AddressSanitizer: ([A-Za-z-]+))");
    static const std::regex access(R"(^(READ|WRITE) of size ([0-9]+) at)");
    static const std::regex region(
        R"(is located ([0-9]+) bytes (to the right of|to the left of|inside of) ([0-9]+)-byte region)");
    static const std::regex frame(R"(^ *#[0-9]+ 0x[0-9a-f]+ in (.*) (\S+?):([0-9]+)(?::([0-9]+))?$)");
    static const std::regex ubsan(R"(^(\S+?):([0-9]+):([0-9]+): runtime error: (.*)$)");
    static const std::regex segv_access(R"(The signal is caused by a (READ|WRITE) memory access)");
    static const std::regex check_marker(R"(^\[headwise-check\] ([^\t]*)\t(.*)$)");

    const std::vector<std::string> lines = lines_of(output);
    Failure f;
    std::string kind, rw, size, offset, side, bytes, ub, check, terminate_what, where_file, first_frame;
    int where_line = 0, where_col = 0, subject_frames = 0;
    bool report_started = false, in_kernel = false;
    for (const std::string& line : lines) {
        std::smatch m;
        // A frame of the emulator's under the report: the error is inside a kernel (exercise 06).
        if (report_started && line.find("headwise::emulator::") != std::string::npos) in_kernel = true;
        if (!report_started && std::regex_match(line, m, check_marker)) {
            f.test = m[1].str();
            check = m[2].str();
            continue;
        }
        if (kind.empty() && std::regex_search(line, m, asan_error)) {
            kind = m[1].str();
            report_started = true;
        } else if (ub.empty() && kind.empty() && std::regex_match(line, m, ubsan)) {
            ub = m[4].str();
            report_started = true;
            if (is_subject_file(m[1].str(), s)) {
                where_file = subject_relative(m[1].str(), s);
                where_line = std::stoi(m[2].str());
                where_col = std::stoi(m[3].str());
            }
        } else if (rw.empty() && std::regex_search(line, m, access)) {
            rw = m[1].str();
            size = m[2].str();
        } else if (rw.empty() && std::regex_search(line, m, segv_access)) {
            rw = m[1].str();
        } else if (side.empty() && std::regex_search(line, m, region)) {
            offset = m[1].str();
            side = m[2].str();
            bytes = m[3].str();
        } else if (report_started && std::regex_match(line, m, frame) && is_subject_file(m[2].str(), s)) {
            // The first frame in the subject's file; for a stack overflow the second one that
            // differs from it (the first is the function's entry, the next the call that recursed).
            const std::string here = m[2].str() + ":" + m[3].str();
            const bool take =
                subject_frames == 0 || (kind == "stack-overflow" && subject_frames == 1 && here != first_frame);
            if (take) {
                if (subject_frames++ == 0) first_frame = here;
                where_file = subject_relative(m[2].str(), s);
                where_line = std::stoi(m[3].str());
                where_col = m[4].matched ? std::stoi(m[4].str()) : 0;
            }
        } else if (line.rfind("  what():  ", 0) == 0) {
            terminate_what = line.substr(11);
        }
    }

    const bool read = rw != "WRITE";
    auto floats = [](const std::string& n) {
        const long b = std::atol(n.c_str());
        return b % 4 == 0 ? fmt::format(" ({} floats)", b / 4) : std::string();
    };
    std::string what;
    const std::string verb = read ? "read" : "wrote";
    const std::string bounds_doc = "docs/xtensor-for-pytorch-users.md, \"Indices, shapes and loop bounds\"";
    const std::string views_doc = "docs/xtensor-for-pytorch-users.md, \"Views, references and lazy expressions\"";
    if (kind == "heap-buffer-overflow" || kind == "stack-buffer-overflow" || kind == "global-buffer-overflow") {
        if (side == "to the right of") {
            what = fmt::format(
                "{} {} bytes {} the end of a {}-byte buffer{}: an index one (or more) past the last "
                "element, e.g. a loop bound <= n or a wrong axis size",
                verb, size, offset == "0" ? "just past" : offset + " bytes past", bytes, floats(bytes));
        } else if (side == "to the left of") {
            what = fmt::format(
                "{} {} bytes {} bytes before the start of a {}-byte buffer{}: an index below 0 (an "
                "unsigned index that wrapped around?)",
                verb, size, offset, bytes, floats(bytes));
        } else {
            what = fmt::format("{} {} bytes outside a buffer ({})", verb, size, kind);
        }
        f.lesson = bounds_doc;
    } else if (kind == "heap-use-after-free") {
        what = fmt::format(
            "{} {} bytes of memory that was already freed: a view, pointer or reference used after the "
            "tensor it points into was destroyed or reassigned",
            verb, size);
        f.lesson = views_doc;
    } else if (kind == "stack-use-after-return" || kind == "stack-use-after-scope") {
        what = fmt::format("{} {} bytes of a local variable whose {} already ended: a dangling reference or view", verb,
                           size, kind == "stack-use-after-return" ? "function had" : "scope had");
        f.lesson = views_doc;
    } else if (kind == "attempting") {
        what = "freed the same memory twice (double free) or freed memory that was never allocated";
        f.lesson = views_doc;
    } else if (kind == "SEGV") {
        what = fmt::format(
            "crashed with a segmentation fault (SIGSEGV) on a {}: an index far outside any tensor, or a "
            "null or dangling pointer",
            read ? "read" : "write");
        f.lesson = bounds_doc;
    } else if (kind == "stack-overflow") {
        what = "ran out of stack (stack overflow): a function that calls itself without end?";
    } else if (timed_out) {
        what =
            "did not finish in time: an endless loop? (a loop whose condition never becomes false, e.g. an "
            "unsigned j >= 0, or a bound that grows); it was at this line when stopped";
    } else if (kind == "ABRT" || exit_code == 128 + 6) {
        what = terminate_what.empty() ? "aborted (SIGABRT): an assert failed or std::terminate was called"
                                      : "an exception escaped and aborted the grader: " + terminate_what;
    } else if (!kind.empty()) {
        what = "AddressSanitizer: " + kind;
    } else if (!ub.empty()) {
        what = "undefined behaviour: " + ub;
        // The 32-bit hint only where UBSan names a 32-bit type ("... cannot be represented in
        // type 'int'"): an overflow of a 64-bit long is another story.
        if (ub.find("overflow") != std::string::npos && ub.find("type 'int'") != std::string::npos) {
            what +=
                " -- the count overflowed 32 bits (an int holds up to 2^31 - 1): count in std::size_t or std::uint64_t";
            f.lesson = "lesson 05 (docs/05_parameter_count.md): counts that pass 2^31";
        } else if (ub.find("shift") != std::string::npos) {
            what += " -- a shift by a negative amount or by the type's width or more";
        } else if (ub.find("out of bounds") != std::string::npos) {
            f.lesson = bounds_doc;
        }
    } else if (exit_code > 128) {
        what = fmt::format("the grader was killed by signal {} ({})", exit_code - 128, strsignal(exit_code - 128));
    } else {
        what =
            fmt::format("the grader stopped before its last test (exit code {}) without a sanitizer report", exit_code);
    }
    if (output.find("/xtensor/xreducer.hpp") != std::string::npos && !kind.empty()) {
        what +=
            " (inside an xtensor reduction such as xt::sum(..., xt::keep_dims) used inside a lazy expression: "
            "xtensor 0.24 then reads past the buffer; evaluate the reduction into a tensor first)";
    }
    // Inside a kernel, the concept to reread is the kernel's (indices from threadIdx and blockIdx,
    // per-thread arrays), not xtensor's.
    if (in_kernel && (!kind.empty() || !ub.empty()))
        f.lesson = "docs/06_cuda_kernel.md, \"Pitfalls, with the lesson's numbers\"";
    if (!check.empty()) what += " -- while checking " + check;
    if (!where_file.empty()) {
        f.where = where_col > 0 ? fmt::format("{}:{}:{}", where_file, where_line, where_col)
                                : fmt::format("{}:{}", where_file, where_line);
        f.source = source_line(s.source_dir / where_file, where_line);
        f.message = fmt::format("{}: {}", f.where, what);
    } else {
        f.message =
            what + (kind.empty() && ub.empty() ? std::string() : " (not in your file: see the stack in the details)");
    }
    if (f.test.empty()) f.test = "(the grader itself)";
    // The sanitizer's own report, for -v.
    bool in_report = false;
    for (const std::string& line : lines) {
        if (line.find("==ERROR:") != std::string::npos || line.find("runtime error:") != std::string::npos)
            in_report = true;
        if (in_report && f.details.size() < 60) {
            std::string shown = replace_all(line, s.source_dir.string() + "/", "");
            if (shown.size() > 240) shown = shown.substr(0, 200) + " ... " + shown.substr(shown.size() - 35);
            f.details.push_back(shown);
        }
    }
    return f;
}

int run_step(const Subject& s, const fs::path& grader, const std::vector<std::string>& extra_args,
             const std::function<void(const std::string&)>& echo, int timeout_s) {
    std::error_code ec;
    fs::remove(s.report, ec);
    std::string subject_files;
    for (const fs::path& f : s.files) subject_files += (subject_files.empty() ? "" : ";") + f.string();
    const std::vector<std::string> env = {
        "HEADWISE_GRADE_ID=" + s.id,
        "HEADWISE_GRADE_REPORT=" + s.report.string(),
        "HEADWISE_GRADE_SOURCE_DIR=" + s.source_dir.string(),
        "HEADWISE_GRADE_SUBJECT=" + subject_files,
        "HEADWISE_GRADE_TRACE=1",
        "ASAN_OPTIONS=detect_leaks=0:halt_on_error=0:abort_on_error=0:handle_abort=1:detect_stack_use_after_return=1:"
        "max_malloc_fill_size=1073741824:malloc_fill_byte=190:"
        "allocator_may_return_null=1:print_summary=1",
        "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1",
    };
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
