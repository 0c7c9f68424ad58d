// `headwise run N|all|next` -- run lessons, each under a banner, stopping at the first that fails.
#include "common.hpp"
#include "progress.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <memory>

namespace headwise::runner {

namespace {

int run_lesson(const Lesson& l, const std::vector<std::string>& extra) {
    std::vector<std::string> args{(binary_dir() / "lessons" / l.name).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_program(args);
}

// `run next`: the first lesson whose exercise has not passed yet (progress.hpp).
int run_next(const std::vector<Lesson>& course, const std::vector<std::string>& extra) {
    const Lesson* l = next_lesson(course);
    if (l == nullptr) {
        fmt::print("headwise: every exercise passes -- nothing next. `./headwise run all` shows every lesson again.\n");
        return 0;
    }
    fmt::print("headwise: next is lesson {:02}, {} (exercise {:02} has not passed yet)\n", l->number, l->title,
               l->number);
    const int rc = run_lesson(*l, extra);
    if (rc == 0) {
        fmt::print("\nheadwise: now edit exercises/{}/ and run `./headwise watch {}` to grade it on every save\n",
                   l->exercise->dir, l->number);
    }
    return rc;
}

int run(const std::string& which, const std::vector<std::string>& extra) {
    const auto course = load_course();
    if (which == "next") return run_next(course, extra);
    if (which != "all") return run_lesson(find_lesson(course, which), extra);
    for (const auto& l : course) {
        fmt::print("\n{:=^96}\n", fmt::format(" lesson {:02} -- {} ", l.number, l.title));
        const int rc = run_lesson(l, extra);
        if (rc == exit_usage && l.needs_model && extra.empty()) {
            // no bad flag was given: the lesson's one line said its model is not cached and how to get it
            fmt::print(stderr, "headwise: lesson {:02} skipped (its model is not here); going on\n", l.number);
            continue;
        }
        if (rc == exit_usage) return rc;  // bad flags: the lesson has said which, in its one line
        if (rc != 0) {
            fmt::print(stderr, "headwise: lesson {:02} ({}) exited with code {}; stopping here.\n", l.number, l.name,
                       rc);
            return rc;
        }
    }
    fmt::print("\n{:=^96}\n", fmt::format(" all {} lessons ran ", course.size()));
    return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
    struct Args {
        std::string which;
        std::vector<std::string> extra;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("run", "run lesson N (1, 2, ...), all lessons in order, or the next one to work on");
    cmd->add_option("lesson", args->which,
                    "lesson number, name, 'all', or 'next' (the first lesson whose exercise has not passed)")
        ->required();
    cmd->add_option("args", args->extra, "flags passed to the lesson (after --), e.g. -- --seq 8");
    cmd->callback([&action, args] { action = [args] { return run(args->which, args->extra); }; });
}

}  // namespace headwise::runner
