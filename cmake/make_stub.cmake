# cmake -DSOLUTION=solutions/NN_topic/file.cpp -DSTUB=out.cpp -P cmake/make_stub.cmake
#
# Turns a reference solution into the stub a learner starts from. The one place this is done:
# the build (pristine stubs for the grader's meta-tests), `headwise reset`, and the check that the
# committed exercises/ are up to date all call this script.
#
# In a solution file the learner's part is marked with three full-line comments:
#
#     // BEGIN SOLUTION
#     ...reference code...
#     // STUB
#     // TODO(ex01): what to do, and where in the lesson to look
#     headwise::not_implemented_yet();
#     // END SOLUTION
#
# The stub keeps what is outside the blocks verbatim and replaces each block by its STUB part;
# the marker lines are dropped. A file without markers (a header) is copied unchanged.
# The solution file itself still compiles and passes: the STUB part follows a `return`, so it is
# never reached.
#
# Written with string(FIND)/string(SUBSTRING) on the whole text, never as a CMake list, so
# semicolons and brackets in C++ survive untouched. Writes STUB only when its content changes.

cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED SOLUTION OR NOT DEFINED STUB)
  message(FATAL_ERROR "usage: cmake -DSOLUTION=<solution file> -DSTUB=<stub file> -P make_stub.cmake")
endif()
if(NOT EXISTS "${SOLUTION}")
  message(FATAL_ERROR "make_stub: ${SOLUTION} does not exist")
endif()

file(READ "${SOLUTION}" text)

# Every line of `text`, split by hand so that no character is interpreted. Returns the stub.
set(out "")
set(state "outside")  # outside -> solution -> stub -> outside
set(line_no 0)
set(rest "${text}")
while(NOT rest STREQUAL "")
  string(FIND "${rest}" "\n" nl)
  if(nl EQUAL -1)
    set(line "${rest}")
    set(rest "")
    set(eol "")
  else()
    string(SUBSTRING "${rest}" 0 ${nl} line)
    math(EXPR after "${nl} + 1")
    string(SUBSTRING "${rest}" ${after} -1 rest)
    set(eol "\n")
  endif()
  math(EXPR line_no "${line_no} + 1")
  string(STRIP "${line}" stripped)

  if(stripped STREQUAL "// BEGIN SOLUTION")
    if(NOT state STREQUAL "outside")
      message(FATAL_ERROR "${SOLUTION}:${line_no}: BEGIN SOLUTION inside another block")
    endif()
    set(state "solution")
    set(block_start ${line_no})
  elseif(stripped STREQUAL "// STUB")
    if(NOT state STREQUAL "solution")
      message(FATAL_ERROR "${SOLUTION}:${line_no}: STUB outside a BEGIN SOLUTION block")
    endif()
    set(state "stub")
  elseif(stripped STREQUAL "// END SOLUTION")
    if(NOT state STREQUAL "stub")
      message(FATAL_ERROR "${SOLUTION}:${line_no}: END SOLUTION without BEGIN SOLUTION and STUB before it")
    endif()
    set(state "outside")
  elseif(NOT state STREQUAL "solution")
    string(APPEND out "${line}${eol}")
  endif()
endwhile()

if(NOT state STREQUAL "outside")
  message(FATAL_ERROR "${SOLUTION}:${block_start}: block opened here is never closed with // END SOLUTION")
endif()

set(old "")
if(EXISTS "${STUB}")
  file(READ "${STUB}" old)
endif()
if(NOT old STREQUAL out)
  get_filename_component(stub_dir "${STUB}" DIRECTORY)
  if(stub_dir)
    file(MAKE_DIRECTORY "${stub_dir}")
  endif()
  file(WRITE "${STUB}" "${out}")
endif()
