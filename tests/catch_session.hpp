// Catch2's session, compiled once (catch_session.cpp) for the unit tests' main and the graders'.
#pragma once

#include <functional>

namespace headwise::test {

// Runs the test cases the command line selects, as Catch2's own main() would; returns the exit code.
int run_catch(int argc, char** argv);

// Runs the command line's test cases again for as long as `next` says so, in one Catch2 session
// (Catch2 allows one per process); `ran` gets each run's exit code. Returns early, with Catch2's
// exit code, when the command line is not understood.
int run_catch_each(int argc, char** argv, const std::function<bool()>& next, const std::function<void(int)>& ran);

}  // namespace headwise::test
