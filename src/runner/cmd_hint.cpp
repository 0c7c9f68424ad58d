// `headwise hint N [--all]` -- progressive hints: each call reveals the next section of the
// exercise's HINTS.md ("## Hint 1", "## Hint 2", ...); --all shows every one. How many were
// shown is kept in the runner's state file (progress.hpp).
#include "common.hpp"
#include "exercise_files.hpp"
#include "progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace headwise::runner {

namespace {

fs::path hints_path(const Exercise& e) {
    return e.hints.empty() ? source_dir() / "exercises" / e.dir / "HINTS.md" : source_dir() / e.hints;
}

// The text of each "## Hint" section, in order, without its heading and surrounding blank lines.
std::vector<std::string> parse_hints(const std::string& markdown) {
    std::vector<std::string> hints;
    std::istringstream in(markdown);
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) {
            inside = line.rfind("## Hint", 0) == 0;
            if (inside) hints.emplace_back();
            continue;
        }
        if (inside) hints.back() += line + '\n';
    }
    for (auto& h : hints) {
        const auto first = h.find_first_not_of(" \t\r\n");
        const auto last = h.find_last_not_of(" \t\r\n");
        h = first == std::string::npos ? std::string() : h.substr(first, last - first + 1);
    }
    return hints;
}

int hint(const std::string& which, bool all) {
    const auto course = load_course();
    const Lesson& lesson = find_lesson(course, which);
    const Exercise& e = require_exercise(course, lesson);
    const fs::path file = hints_path(e);
    const auto markdown = read_file(file);
    const auto hints = markdown ? parse_hints(*markdown) : std::vector<std::string>{};
    if (hints.empty()) {
        fmt::print(stderr, "headwise: exercise {:02} has no hints yet ({} has no \"## Hint 1\" section)\n",
                   lesson.number, file.string());
        return 1;
    }
    const int n = static_cast<int>(hints.size());

    State state = load_state();
    int& shown = state.hints_shown[e.id];
    const int before = std::clamp(shown, 0, n);
    const int from = all ? 1 : std::min(before + 1, n);
    const int to = all ? n : from;
    for (int k = from; k <= to; ++k) {
        fmt::print("{:-^72}\n{}\n", fmt::format(" exercise {:02}, hint {} of {} ", lesson.number, k, n), hints[k - 1]);
    }
    shown = std::max(before, to);
    save_state(state);

    if (!all && before == n) {
        fmt::print("(all {} hints were shown already; that was the last one again -- --all shows every hint)\n", n);
    } else if (to < n) {
        fmt::print("(`./headwise hint {}` again for hint {} of {}; --all shows every hint)\n", lesson.number, to + 1,
                   n);
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
