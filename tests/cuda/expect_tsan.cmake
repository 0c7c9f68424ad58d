# cmake -DPROGRAM=exe -DEXPECT_RACE=ON|OFF -P expect_tsan.cmake
# Runs a ThreadSanitizer-instrumented program. EXPECT_RACE=ON: passes only if TSan reports a data
# race inside the tiled kernel. EXPECT_RACE=OFF: passes only if the program exits 0 and TSan
# reports nothing -- the control that shows the first check is not TSan crying wolf.
#
# The programs are not part of the default build (`./headwise test`): each builds the code it checks
# once more under -fsanitize=thread (~30 s of CPU on a first run). scripts/ci-extras tsan builds and
# runs them; where one is not built, its test says so and is reported as skipped, never passed.
if(NOT EXISTS "${PROGRAM}")
  get_filename_component(name "${PROGRAM}" NAME)
  message("skipped: ${name} is not built (ThreadSanitizer builds are their own stage: scripts/ci-extras tsan)")
  return()
endif()
set(ENV{TSAN_OPTIONS} "halt_on_error=1 second_deadlock_stack=1")
execute_process(COMMAND ${PROGRAM} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 300)
set(all "${out}\n${err}")
if(EXPECT_RACE)
  if(NOT all MATCHES "WARNING: ThreadSanitizer: data race")
    message(FATAL_ERROR "expected ThreadSanitizer to report a data race, it did not (exit ${rc}):\n${all}")
  endif()
  if(NOT all MATCHES "attention_tiled")
    message(FATAL_ERROR "ThreadSanitizer reported a race, but not in attention_tiled:\n${all}")
  endif()
  message(STATUS "ThreadSanitizer caught the missing __syncthreads() (exit ${rc})")
else()
  if(NOT rc EQUAL 0 OR all MATCHES "ThreadSanitizer")
    message(FATAL_ERROR "expected a clean run (exit 0, no ThreadSanitizer report), got exit ${rc}:\n${all}")
  endif()
endif()
