# cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch dir> -P tests/grade/check_exercises.cmake
#
# cmake ... -DGRADETOOL=<headwise-gradetool>
# Checks that every file of solutions/ has its twin in exercises/: the stub headwise-gradetool
# generates from it (headers and other files without markers: an identical copy).
# Meaningful only on a pristine clone: when exercises/ differs and git shows local edits there,
# that is a learner at work, and the test is skipped (the "HEADWISE-SKIP" line tells ctest).
cmake_minimum_required(VERSION 3.25)

file(GLOB_RECURSE solution_files RELATIVE "${SOURCE_DIR}/solutions" "${SOURCE_DIR}/solutions/*")
list(SORT solution_files)
if(NOT solution_files)
  message(FATAL_ERROR "no files under ${SOURCE_DIR}/solutions")
endif()

set(stale "")
foreach(rel IN LISTS solution_files)
  execute_process(COMMAND ${GRADETOOL} stub ${SOURCE_DIR}/solutions/${rel} ${WORK_DIR}/${rel}
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the stub generator failed on solutions/${rel}:\n${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK_DIR}/${rel}" "${SOURCE_DIR}/exercises/${rel}"
    RESULT_VARIABLE differs OUTPUT_QUIET ERROR_QUIET)
  if(NOT differs EQUAL 0)
    string(APPEND stale "\n  exercises/${rel}")
  endif()
endforeach()
if(stale STREQUAL "")
  list(LENGTH solution_files count)
  message(STATUS "all ${count} files of exercises/ are the stubs of solutions/")
  return()
endif()

find_program(GIT git)
set(local_edits "")
if(GIT)
  execute_process(COMMAND ${GIT} -C "${SOURCE_DIR}" status --porcelain -- exercises
    OUTPUT_VARIABLE local_edits RESULT_VARIABLE git_rc ERROR_QUIET)
  if(NOT git_rc EQUAL 0)
    set(local_edits "not a git checkout")
  endif()
else()
  set(local_edits "git is not installed")
endif()
if(NOT local_edits STREQUAL "")
  message("HEADWISE-SKIP: exercises/ has local changes (your answers?), so whether the committed stubs "
    "match solutions/ cannot be checked here. These differ:${stale}")
  return()
endif()
message(FATAL_ERROR "These committed files are not the stubs generated from solutions/:${stale}\n"
  "Regenerate each with: build/src/gradekit/headwise-gradetool stub solutions/<file> exercises/<file>")
