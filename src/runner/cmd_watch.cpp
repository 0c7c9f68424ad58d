// `headwise watch [N]` -- re-grade exercise N (default: the first that has not passed) every
// time one of its files is saved; Ctrl-C stops it.
//
// It polls each file's inode, size and modification time four times a second. That notices
// editors that write in place and editors that save by writing a new file and renaming it over
// the old one (vim, VS Code, JetBrains): a watch on the file itself, as inotify gives, would be
// left on the old, deleted inode. Grading is `<build>/src/headwise grade N`, run as a child
// process, exactly as the learner would type it.
#include "common.hpp"
#include "exercise_files.hpp"
#include "progress.hpp"

#include <CLI/CLI.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <sys/stat.h>

namespace headwise::runner {

namespace {

volatile std::sig_atomic_t stop_requested = 0;

extern "C" void request_stop(int) { stop_requested = 1; }

// What polling compares: enough to see an in-place write and a rename over the file.
struct Stamp {
    bool exists = false;
    ino_t inode = 0;
    off_t size = 0;
    long long mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
};

std::vector<Stamp> stamps(const Exercise& e) {
    std::vector<Stamp> out;
    for (const auto& file : e.files) {
        struct stat st {};
        Stamp s;
        if (::stat(learner_path(e, file).c_str(), &st) == 0) {
            s = {true, st.st_ino, st.st_size,
                 static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec};
        }
        out.push_back(s);
    }
    return out;
}

// Sleeps up to `ms`, returning early (false) when Ctrl-C was pressed.
bool nap(int ms) {
    for (int slept = 0; slept < ms && !stop_requested; slept += 25) {
        const timespec t{0, 25'000'000};
        nanosleep(&t, nullptr);
    }
    return !stop_requested;
}

std::string now() { return fmt::format("{:%H:%M:%S}", fmt::localtime(std::time(nullptr))); }

void grade(const Lesson& lesson) {
    const Exercise& e = *lesson.exercise;
    run_program({(binary_dir() / "src" / "headwise").string(), "grade", std::to_string(lesson.number)});
    if (stop_requested) return;
    const auto report = read_report(e);
    if (report && report->all_passed()) {
        fmt::print(
            "watch: exercise {:02} passes all {} tests. Next: `./headwise list`, or keep editing (Ctrl-C stops)\n",
            lesson.number, report->total);
    } else {
        const std::string state = !report ? "no grade report"
                                  : !report->compiled
                                      ? "does not compile"
                                      : fmt::format("{} of {} tests pass", report->passed, report->total);
        fmt::print("watch: exercise {:02}: {} -- save a file to re-grade (stuck? ./headwise hint {}; Ctrl-C stops)\n",
                   lesson.number, state, lesson.number);
    }
    std::fflush(stdout);  // shown now even when stdout is a pipe or a file
}

int watch(const std::string& which, int interval_ms) {
    const auto course = load_course();
    const Lesson* lesson = nullptr;
    if (which.empty()) {
        lesson = next_lesson(course);
        if (lesson == nullptr) {
            fmt::print("watch: every exercise passes; nothing to watch (`./headwise watch N` watches one anyway)\n");
            return 0;
        }
    } else {
        lesson = &find_lesson(course, which);
        require_exercise(course, *lesson);
    }
    const Exercise& e = *lesson->exercise;

    struct sigaction sa {};
    sa.sa_handler = request_stop;  // no SA_RESTART: a Ctrl-C interrupts the sleep at once
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int {
    }, old_term{};
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    fmt::print("watch: exercise {:02} ({}), files: {}\n", lesson->number, lesson->title, fmt::join(e.files, ", "));
    std::vector<Stamp> last = stamps(e);
    grade(*lesson);
    bool reported_missing = false;
    while (nap(interval_ms)) {
        std::vector<Stamp> current = stamps(e);
        if (current == last) continue;
        // Editors save in steps (write, rename, chmod): wait until the files hold still.
        for (int i = 0; i < 20 && nap(150); ++i) {
            const auto settled = stamps(e);
            if (settled == current) break;
            current = settled;
        }
        if (stop_requested) break;
        std::vector<std::string> changed, missing;
        for (std::size_t i = 0; i < e.files.size(); ++i) {
            if (!current[i].exists)
                missing.push_back(e.files[i]);
            else if (!(current[i] == last[i]))
                changed.push_back(e.files[i]);
        }
        last = current;
        if (!missing.empty()) {
            if (!reported_missing) fmt::print("watch: waiting for {} to exist again\n", fmt::join(missing, ", "));
            std::fflush(stdout);
            reported_missing = true;
            continue;
        }
        reported_missing = false;
        fmt::print("\n{:-^96}\n", fmt::format(" {} saved: {} -- grading exercise {:02} ", now(),
                                              fmt::join(changed, ", "), lesson->number));
        grade(*lesson);
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    fmt::print("\nwatch: stopped\n");
    return 0;
}

}  // namespace

void add_watch_command(CLI::App& app, Action& action) {
    struct Args {
        std::string which;
        int interval_ms = 250;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("watch", "re-grade exercise N whenever one of its files is saved (Ctrl-C stops)");
    cmd->add_option("exercise", args->which, "lesson/exercise number; default: the first exercise not yet passed");
    cmd->add_option("--interval", args->interval_ms, "milliseconds between looks at the files")
        ->check(CLI::Range(20, 10000))
        ->capture_default_str();
    cmd->callback([&action, args] { action = [args] { return watch(args->which, args->interval_ms); }; });
}

}  // namespace headwise::runner
