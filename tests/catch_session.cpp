// Catch2's implementation, compiled once for both of its mains: the unit tests' (catch_main.cpp)
// and the graders' (grade/grade_main.cpp). Without Catch2's signal handlers: a grader's crash must
// reach AddressSanitizer, whose report names the learner's line; a unit test that crashes is named
// by ctest, which runs each test case as a test of its own.
#define CATCH_CONFIG_RUNNER
#define CATCH_CONFIG_NO_POSIX_SIGNALS
#include <catch2/catch.hpp>

#include "catch_session.hpp"

int headwise::test::run_catch(int argc, char** argv) { return Catch::Session().run(argc, argv); }

headwise::test::CatchRuns::CatchRuns(int argc, char** argv) : session_(std::make_unique<Catch::Session>()) {
    refused_ = session_->applyCommandLine(argc, argv);
}

headwise::test::CatchRuns::~CatchRuns() = default;

int headwise::test::CatchRuns::run() { return refused_ != 0 ? refused_ : session_->run(); }
