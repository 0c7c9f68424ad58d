# cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<dir> -P tests/build_progress_test.cmake
#
# scripts/build-progress (the headwise script's build filter) announces "building the runner and
# the lessons" only when something is built: ninja's "Re-checking globbed directories" line,
# printed on every run, and "no work to do" say nothing; a compile line says it once.
cmake_minimum_required(VERSION 3.25)
file(MAKE_DIRECTORY "${WORK_DIR}")

function(filter name input out)
  file(WRITE "${WORK_DIR}/${name}.in" "${input}")
  file(REMOVE "${WORK_DIR}/${name}.log")
  execute_process(COMMAND sh "${SOURCE_DIR}/scripts/build-progress" "${WORK_DIR}/${name}.log"
    INPUT_FILE "${WORK_DIR}/${name}.in" OUTPUT_VARIABLE printed ERROR_VARIABLE printed RESULT_VARIABLE rc)
  file(READ "${WORK_DIR}/${name}.log" logged)
  if(NOT rc EQUAL 0 OR NOT logged STREQUAL input)
    message(FATAL_ERROR "${name}: exit ${rc}, and the log should hold the input whole; it holds:\n${logged}")
  endif()
  set(${out} "${printed}" PARENT_SCOPE)
endfunction()

filter(nothing "[0/2] Re-checking globbed directories...\nninja: no work to do.\nheadwise-build-exit=0\n" printed)
if(NOT printed STREQUAL "")
  message(FATAL_ERROR "nothing was built, yet the filter printed:\n${printed}")
endif()

filter(something "[0/2] Re-checking globbed directories...\n[1/2] Building CXX object src/x.o\n[2/2] Linking CXX executable src/headwise\nheadwise-build-exit=0\n" printed)
string(REGEX MATCHALL "building the runner and the lessons" said "${printed}")
list(LENGTH said times)
if(NOT times EQUAL 1)
  message(FATAL_ERROR "a build of two steps should be announced once, it was ${times} times:\n${printed}")
endif()
