// headwise -- the learner's runner: `./headwise <command>`. Each command is in cmd_<name>.cpp.
#include "common.hpp"

#include <fmt/format.h>

#include <algorithm>

int main(int argc, char** argv) {
    using namespace headwise::runner;
    CLI::App app{"headwise: multi-head self-attention, step by step.\n"
                 "Start with `./headwise run all`, then read docs/ and edit exercises/.",
                 "headwise"};
    app.require_subcommand(1);

    Action action;
    add_run_command(app, action);
    add_test_command(app, action);
    add_bench_command(app, action);
    add_attend_command(app, action);
    add_list_command(app, action);
    add_hint_command(app, action);
    add_watch_command(app, action);
    add_reset_command(app, action);
    add_solution_command(app, action);
    add_grade_command(app, action);
    add_figures_command(app, action);
    add_heads_command(app, action);

    // A mistyped command: CLI11 would only say "A subcommand is required"; name it and the valid ones.
    if (argc > 1 && argv[1][0] != '-') {
        std::vector<std::string> commands;
        for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub->get_name());
        if (std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
            fmt::print(stderr, "headwise: no command '{}' (the commands are {}; see ./headwise --help)\n", argv[1],
                       fmt::join(commands, ", "));
            return exit_usage;
        }
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::string msg = e.what();
        for (char& c : msg)
            if (c == '\n') c = ' ';
        fmt::print(stderr, "headwise: {} (see ./headwise --help)\n", msg);
        return exit_usage;
    }
    try {
        return action ? action() : 0;
    } catch (const usage_error& e) {
        fmt::print(stderr, "headwise: {}\n", e.what());
        return exit_usage;
    } catch (const std::exception& e) {
        fmt::print(stderr, "headwise: error: {}\n", e.what());
        return 1;
    }
}
