// Catch2's session, compiled once (catch_session.cpp) for the unit tests' main and the graders'.
#pragma once

namespace headwise::test {

// Runs the test cases the command line selects, as Catch2's own main() would; returns the exit code.
int run_catch(int argc, char** argv);

}  // namespace headwise::test
