// `headwise run N|all` -- run lessons, each under a banner, stopping at the first that fails.
#include "common.hpp"

#include <fmt/format.h>

#include <memory>

namespace headwise::runner {

namespace {

int run_lesson(const Lesson& l, const std::vector<std::string>& extra) {
    std::vector<std::string> args{(binary_dir() / "lessons" / l.name).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_program(args);
}

int run(const std::string& which, const std::vector<std::string>& extra) {
    const auto course = load_course();
    if (which != "all") return run_lesson(find_lesson(course, which), extra);
    for (const auto& l : course) {
        fmt::print("\n{:=^96}\n", fmt::format(" lesson {:02} -- {} ", l.number, l.title));
        const int rc = run_lesson(l, extra);
        if (rc != 0) {
            fmt::print(stderr, "headwise: lesson {:02} ({}) exited with code {}; stopping here.\n", l.number, l.name, rc);
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
    auto* cmd = app.add_subcommand("run", "run lesson N (1, 2, ...) or all lessons in order");
    cmd->add_option("lesson", args->which, "lesson number, name, or 'all'")->required();
    cmd->add_option("args", args->extra, "flags passed to the lesson (after --), e.g. -- --seq 8");
    cmd->callback([&action, args] { action = [args] { return run(args->which, args->extra); }; });
}

}  // namespace headwise::runner
