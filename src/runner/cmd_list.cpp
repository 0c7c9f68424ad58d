// `headwise list` -- the course in order (from course.json), each exercise's status, a progress
// bar and the next step. Status is recomputed every time (progress.hpp): grade reports, the
// learner's files against the pristine stubs, and the hint counter.
#include "common.hpp"
#include "progress.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace headwise::runner {

namespace {

int list() {
    const auto course = load_course();
    const State state = load_state();

    // The title column fits the longest title up to a limit. A longer title is never cut: it
    // gets its own line, and its exercise and status go on the next one, in their columns.
    constexpr std::size_t max_title = 56;
    std::size_t title_width = 6;
    for (const auto& l : course) title_width = std::max(title_width, std::min(l.title.size(), max_title));
    auto row = [&](const std::string& number, const std::string& title, const std::string& id,
                   const std::string& status) {
        if (title.size() > title_width) {
            fmt::print("{:<4}{}\n", number, title);
            fmt::print("{:<4}{:<{}}  {:<10}{}\n", "", "", title_width, id, status);
        } else {
            fmt::print("{:<4}{:<{}}  {:<10}{}\n", number, title, title_width, id, status);
        }
    };

    std::size_t exercises = 0, passed = 0;
    const Lesson* next = nullptr;
    std::string next_status;
    row("#", "lesson", "exercise", "status");
    for (const auto& l : course) {
        if (!l.exercise) {
            row(fmt::format("{:02}", l.number), l.title, "-", "(no exercise)");
            continue;
        }
        const auto& e = *l.exercise;
        const ExerciseStatus st = exercise_status(e);
        ++exercises;
        if (st.status == Status::passed) ++passed;
        if (st.status != Status::passed && next == nullptr) {
            next = &l;
            next_status = st.describe();
        }
        std::string status = st.describe();
        if (const auto it = state.hints_shown.find(e.id); it != state.hints_shown.end() && !it->second.empty()) {
            status += fmt::format(" [{} hint{} used]", it->second.size(), it->second.size() == 1 ? "" : "s");
        }
        row(fmt::format("{:02}", l.number), l.title, e.id, status);
    }

    constexpr std::size_t width = 30;
    const std::size_t filled = exercises == 0 ? 0 : passed * width / exercises;
    fmt::print("\nprogress [{}{}] {} of {} exercises passed\n", std::string(filled, '#'),
               std::string(width - filled, '.'), passed, exercises);
    if (exercises == 0) {
        fmt::print("next: ./headwise run all (this course has no exercises yet)\n");
    } else if (next == nullptr) {
        fmt::print(
            "next: every exercise passes -- well done. `./headwise solution N` compares yours with the reference.\n");
    } else {
        const auto& e = *next->exercise;
        fmt::print("next: lesson {:02}, {} ({})\n", next->number, next->title, next_status);
        fmt::print(
            "      ./headwise run {0}   then edit exercises/{1}/   then ./headwise watch {0}   "
            "(stuck? ./headwise hint {0})\n",
            next->number, e.dir);
    }
    return 0;
}

}  // namespace

void add_list_command(CLI::App& app, Action& action) {
    auto* cmd = app.add_subcommand("list", "lessons and exercises in order, with status, progress and the next step");
    cmd->callback([&action] { action = [] { return list(); }; });
}

}  // namespace headwise::runner
