// tests/grade/grade_main.cpp -- Catch2's main() for the graders. Catch2's own signal handlers
// are off: a crash must reach AddressSanitizer, whose report names the learner's line
// (gradekit/steps.cpp turns it into the diagnosis).
#define CATCH_CONFIG_MAIN
#define CATCH_CONFIG_NO_POSIX_SIGNALS
#include <catch2/catch.hpp>
