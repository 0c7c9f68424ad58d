// Catch2's session, compiled once (catch_session.cpp) for the unit tests' main and the graders'.
#pragma once

#include <memory>

namespace Catch {
class Session;
}

namespace headwise::test {

// Runs the test cases the command line selects, as Catch2's own main() would; returns the exit code.
int run_catch(int argc, char** argv);

// One Catch2 session (Catch2 allows one per process), its command line read once, run as often as
// asked: the repair step's grader runs the same checks edit after edit (grade/grade_main.cpp), in
// children forked after the session was made.
class CatchRuns {
public:
    CatchRuns(int argc, char** argv);
    ~CatchRuns();
    CatchRuns(const CatchRuns&) = delete;
    CatchRuns& operator=(const CatchRuns&) = delete;
    // Catch2's exit code for a command line it does not understand, else 0.
    int refused() const { return refused_; }
    int run();  // the selected test cases once; their exit code

private:
    std::unique_ptr<Catch::Session> session_;
    int refused_ = 0;
};

}  // namespace headwise::test
