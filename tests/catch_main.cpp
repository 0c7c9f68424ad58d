// The one translation unit that carries Catch2's main() for every test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
