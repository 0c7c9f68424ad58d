// `headwise hint N [--all]` -- progressive hints: each call reveals one more section of the
// exercise's HINTS.md ("## Hint 1", "## Hint 2", ...): the first not yet shown that is about a
// check the last grade failed (hints.hpp), else the next in order; --all shows every one. Which
// were shown is kept in the runner's state file (progress.hpp).
#include "common.hpp"
#include "exercise_files.hpp"
#include "hints.hpp"
#include "progress.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace headwise::runner {

namespace {

// Which hint to show: the first not yet shown that is about a check the last grade failed, else
// the first not yet shown, else (all shown) the last one again.
int next_hint(const std::vector<Hint>& hints, const Exercise& e, const std::set<int>& revealed,
              std::string& failing_test) {
    if (const auto report = read_report(e))
        if (const auto keyed = hint_for_failure(hints, *report, revealed)) {
            failing_test = keyed->failing_test;
            return keyed->number;
        }
    const int n = static_cast<int>(hints.size());
    for (int k = 1; k <= n; ++k)
        if (!revealed.contains(k)) return k;
    return n;
}

int hint(const std::string& which, bool all) {
    const auto course = load_course();
    const Lesson& lesson = find_lesson(course, which);
    const Exercise& e = require_exercise(course, lesson);
    const fs::path file = hints_path(e);
    const auto hints = load_hints(e);
    if (hints.empty()) {
        fmt::print(stderr, "headwise: exercise {:02} has no hints yet ({} has no \"## Hint 1\" section)\n",
                   lesson.number, file.string());
        return 1;
    }
    const int n = static_cast<int>(hints.size());
    State state = load_state();
    std::set<int>& revealed = state.hints_shown[e.id];
    const bool all_seen = static_cast<int>(revealed.size()) >= n;
    std::string failing_test;
    const int first = all ? 1 : next_hint(hints, e, revealed, failing_test), last = all ? n : first;
    if (!failing_test.empty())
        fmt::print("(your last grade failed \"{}\": hint {} is about that)\n", failing_test, first);
    for (int k = first; k <= last; ++k) {
        fmt::print("{:-^72}\n{}\n", fmt::format(" exercise {:02}, hint {} of {} ", lesson.number, k, n),
                   hints[k - 1].text);
        revealed.insert(k);
    }
    save_state(state);

    if (all) return 0;
    const int left = n - static_cast<int>(revealed.size());
    if (all_seen) {
        fmt::print("(all {} hints were shown already; that was the last one again -- --all shows every hint)\n", n);
    } else if (left > 0) {
        fmt::print("(`./headwise hint {}` again for another hint, {} of {} not shown yet; --all shows every hint)\n",
                   lesson.number, left, n);
    } else {
        fmt::print("(that was the last hint; once the exercise passes, `./headwise solution {}` shows the reference)\n",
                   lesson.number);
    }
    return 0;
}

}  // namespace

void add_hint_command(CLI::App& app, Action& action) {
    add_exercise_command(app, action, "hint", "the next hint for exercise N (each call reveals one more)", "--all",
                         "show every hint of the exercise", hint);
}

}  // namespace headwise::runner
