// `headwise test` -- build and run the project's own test suite (ctest --preset default).
#include "common.hpp"

#include <fmt/format.h>

#include <memory>

namespace headwise::runner {

void add_test_command(CLI::App& app, Action& action) {
    auto extra = std::make_shared<std::vector<std::string>>();
    auto* cmd = app.add_subcommand("test", "build and run the project's own test suite (ctest)");
    cmd->add_option("ctest-args", *extra, "extra ctest arguments (after --), e.g. -- -R softmax");
    cmd->callback([&action, extra] {
        action = [extra] {
            fmt::print("headwise: building the test suite\n");
            if (const int rc = run_program({"cmake", "--build", "--preset", "tests"}, source_dir()); rc != 0) return rc;
            std::vector<std::string> args{"ctest", "--preset", "default"};
            args.insert(args.end(), extra->begin(), extra->end());
            return run_program(args, source_dir());
        };
    });
}

}  // namespace headwise::runner
