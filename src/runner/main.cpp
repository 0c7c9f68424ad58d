// headwise -- the learner's runner: `./headwise <command>`. Each command is in cmd_<name>.cpp.
#include "common.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <algorithm>

int main(int argc, char** argv) {
    using namespace headwise::runner;
    CLI::App app{
        "headwise: multi-head self-attention, step by step.\n"
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
    add_train_command(app, action);
    add_generate_command(app, action);

    // A mistyped command: CLI11 would only say "A subcommand is required"; name it and the valid ones.
    if (argc > 1 && argv[1][0] != '-') {
        std::vector<std::string> commands;
        for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
            commands.push_back(sub->get_name());
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
        // `run 1 --seq 8`: lesson flags given to the runner. Say where they go.
        const std::vector<std::string> args(argv + 1, argv + argc);
        if (args.size() >= 3 && args[0] == "run" && std::find(args.begin(), args.end(), "--") == args.end()) {
            const auto flag =
                std::find_if(args.begin() + 1, args.end(), [](const std::string& a) { return a.rfind("-", 0) == 0; });
            if (flag != args.end() && flag != args.begin() + 1) {
                std::vector<std::string> fixed(args.begin(), flag);
                fixed.push_back("--");
                fixed.insert(fixed.end(), flag, args.end());
                fmt::print(stderr,
                           "headwise: {} is a flag of the lesson, not of the runner: put lesson flags after --, as in "
                           "./headwise {}\n",
                           *flag, fmt::join(fixed, " "));
                return exit_usage;
            }
        }
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
