# Shared settings for every headwise target, applied per target (no global flags).

# Warnings and sanitizers travel through this interface target.
add_library(headwise_options INTERFACE)
add_library(headwise::options ALIAS headwise_options)
target_compile_features(headwise_options INTERFACE cxx_std_20)
target_compile_options(headwise_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>
  # Never on learner code (a grader's subject, the mistakes): its warnings are shown, not fatal.
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${HEADWISE_WERROR}>,$<NOT:$<BOOL:$<TARGET_PROPERTY:HEADWISE_LEARNER_CODE>>>>:-Werror>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${HEADWISE_CCACHE_PROGRAM}>>:-fpch-preprocess>)
# Linked by gold where the compiler can use it: a test or a lesson links in ~0.2 s against ~0.5 s
# with ld.bfd, and a first run links about a hundred programs.
include(CheckLinkerFlag)
check_linker_flag(CXX "-fuse-ld=gold" HEADWISE_HAVE_GOLD)
if(HEADWISE_HAVE_GOLD)
  target_link_options(headwise_options INTERFACE $<$<LINK_LANGUAGE:CXX>:-fuse-ld=gold>)
endif()
if(HEADWISE_SANITIZE)
  target_compile_options(headwise_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(headwise_options INTERFACE -fsanitize=address,undefined)
endif()

# Tests are built only when asked for (./headwise test builds this target first),
# so the first command reaches lesson 01 as fast as possible.
add_custom_target(headwise_tests)

# The headers every precompiled header holds (xtensor is header-heavy: ~20 s per translation unit
# without one): the library's (src/CMakeLists.txt), the lessons', the tests' and the graders'
# subjects'. A precompiled header serves only sources compiled with its options, hence one per set.
set_property(GLOBAL PROPERTY HEADWISE_PCH_HEADERS <xtensor/xtensor.hpp> <xtensor/xview.hpp> <xtensor/xio.hpp> <xtensor/xmath.hpp>
  <fmt/format.h> <vector> <string> <array> <cmath>)

# headwise_add_pch(NAME [OPTIONS ...] [HEADERS ...] [LIBS ...]): a precompiled header of those headers
# (and HEADERS) built with OPTIONS, for the targets compiled with the same options (REUSE_FROM NAME).
function(headwise_add_pch name)
  cmake_parse_arguments(arg "" "" "OPTIONS;HEADERS;LIBS" ${ARGN})
  add_library(${name} OBJECT ${PROJECT_SOURCE_DIR}/src/pch.cpp)
  target_link_libraries(${name} PUBLIC headwise::options xtensor fmt::fmt ${arg_LIBS})
  target_compile_options(${name} PRIVATE ${arg_OPTIONS})
  get_property(headers GLOBAL PROPERTY HEADWISE_PCH_HEADERS)
  target_precompile_headers(${name} PRIVATE ${headers} ${arg_HEADERS})
endfunction()

# What tests and lessons compile with where the build optimises (Release): -O1, not -O3. A Debug
# build (the ASan preset) keeps its -O0, where GCC 12 also stays quiet about std::regex.
set(HEADWISE_LIGHT_OPTIMIZE $<$<CONFIG:Release>:-O1>)

# headwise_test_sources(TARGET): how a test program's own sources compile -- at -O1 in Release, with
# the tests' precompiled header (tests/CMakeLists.txt: xtensor, fmt and Catch2, built the same way).
# A test asserts what the code does, never how fast (benchmarks measure that), and the library it
# calls keeps the build's optimisation; its own file compiles in about 60% of the time it takes at -O3.
function(headwise_test_sources target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O1>)  # HEADWISE_LIGHT_OPTIMIZE
  target_precompile_headers(${target} REUSE_FROM headwise_test_pch)
endfunction()

# headwise_add_test(NAME SOURCES... [LIBS ...] [PROPERTIES ...]): one Catch2 test executable,
# discovered by ctest; PROPERTIES are set on each of its tests (beside LABELS unit).
function(headwise_add_test name)
  cmake_parse_arguments(arg "" "" "SOURCES;LIBS;PROPERTIES" ${ARGN})
  add_executable(${name} EXCLUDE_FROM_ALL ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE headwise::core headwise::catch_main ${arg_LIBS})
  headwise_test_sources(${name})
  add_dependencies(headwise_tests ${name})
  catch_discover_tests(${name}
    TEST_PREFIX "${name}: "
    PROPERTIES LABELS "unit" ${arg_PROPERTIES}
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
endfunction()
