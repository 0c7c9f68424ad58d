// `headwise solution N [--force]` -- the reference solution of exercise N, shown only once the
// exercise has passed (its last grade report says so), or with --force, which first says what
// it is about to reveal. The files are shown as the reference code alone: the solution/stub
// markers and the stub parts are left out.
#include "common.hpp"
#include "exercise_files.hpp"
#include "progress.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

namespace headwise::runner {

namespace {

int solution(const std::string& which, bool force) {
    const auto course = load_course();
    const Lesson& lesson = find_lesson(course, which);
    const Exercise& e = require_exercise(course, lesson);

    const auto report = read_report(e);
    const bool passed = report && report->all_passed();
    if (!passed && !force) {
        const std::string where =
            !report             ? "it has not been graded yet"
            : !report->compiled ? "its last grade did not compile"
                                : fmt::format("its last grade passed {} of {} tests", report->passed, report->total);
        fmt::print(stderr,
                   "headwise: exercise {:02} has not passed yet ({}): `./headwise grade {}` once it works, or "
                   "`./headwise solution {} --force` to see the answer now\n",
                   lesson.number, where, lesson.number, lesson.number);
        return 1;
    }
    if (!passed) {
        fmt::print(
            "--force: this shows the complete reference answer to exercise {:02} ({}) before yours passes: {}\n\n",
            lesson.number, lesson.title, fmt::join(e.files, ", "));
    }
    for (const auto& file : e.files) {
        const fs::path path = solution_path(e, file);
        const auto text = read_file(path);
        if (!text) throw std::runtime_error(fmt::format("the reference {} is missing", path.string()));
        fmt::print("{:=^96}\n{}", fmt::format(" solutions/{}/{} ", e.dir, file), solution_view(*text));
        if (!text->empty() && text->back() != '\n') fmt::print("\n");
    }
    return 0;
}

}  // namespace

void add_solution_command(CLI::App& app, Action& action) {
    add_exercise_command(app, action, "solution", "the reference solution of exercise N, once it passes", "--force",
                         "show it even though the exercise has not passed yet", solution);
}

}  // namespace headwise::runner
