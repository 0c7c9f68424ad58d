// tests/grade/grade_main.cpp -- Catch2's main() for the graders. Catch2 itself, without its own
// signal handlers, is compiled once in tests/catch_session.cpp: a crash must reach AddressSanitizer,
// whose report names the learner's line (gradekit/steps.cpp turns it into the diagnosis).
//
// --grade-subject=<key> (before Catch2's own arguments) chooses the subject a meta-tests' grader
// grades among those it holds (registry.hpp); a key it does not hold is one line and exit 2.
#include "catch_session.hpp"
#include "registry.hpp"

#include <cstdio>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
    headwise::grade::own_command().assign(argv, argv + argc);  // to run itself as a candidate edit
    constexpr std::string_view flag = "--grade-subject=";
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (i > 0 && arg.starts_with(flag)) {
            headwise::grade::chosen_subject() = std::string(arg.substr(flag.size()));
        } else {
            args.push_back(argv[i]);
        }
    }
    if (!headwise::grade::subject_keys().contains(headwise::grade::chosen_subject())) {
        std::fprintf(stderr, "grader: it holds no subject '%s'\n", headwise::grade::chosen_subject().c_str());
        return 2;
    }
    return headwise::test::run_catch(static_cast<int>(args.size()), args.data());
}
