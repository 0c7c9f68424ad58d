// The main() of every unit test executable (Catch2 itself: catch_session.cpp).
#include "catch_session.hpp"

int main(int argc, char** argv) { return headwise::test::run_catch(argc, argv); }
