// Catch2's implementation, compiled once for both of its mains: the unit tests' (catch_main.cpp)
// and the graders' (grade/grade_main.cpp). Without Catch2's signal handlers: a grader's crash must
// reach AddressSanitizer, whose report names the learner's line; a unit test that crashes is named
// by ctest, which runs each test case as a test of its own.
#define CATCH_CONFIG_RUNNER
#define CATCH_CONFIG_NO_POSIX_SIGNALS
#include <catch2/catch.hpp>

#include "catch_session.hpp"

int headwise::test::run_catch(int argc, char** argv) { return Catch::Session().run(argc, argv); }

int headwise::test::run_catch_each(int argc, char** argv, const std::function<bool()>& next,
                                   const std::function<void(int)>& ran) {
    Catch::Session session;
    if (const int bad = session.applyCommandLine(argc, argv); bad != 0) return bad;
    while (next()) ran(session.run());
    return 0;
}
