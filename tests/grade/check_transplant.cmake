# cmake -DGRADETOOL=<headwise-gradetool> -DID=ex05 -DSOURCE_DIR=<repo> -DBUILD_DIR=<build> -DTARGET=<grader target>
#       -DGRADER=<its binary> -DSUBJECT=<the patched file> -DSOLUTION=<the solution file> -DSPEC=<.mistake>
#       -DREPORT=<json> -P tests/grade/check_transplant.cmake
#
# The transplant step's test (gradekit/transplant.hpp): the subject, a learner-style mistake that
# no single edit of the solution reproduces, is graded as `headwise grade` grades (gradetool run),
# must fail with no edit named by the search (but see expect-search-edit:), and the transplant step
# must then find its lines: its sentence matches every "expect-located: <regex>" line of SPEC. (And
# "expect-fresh:", below.)
cmake_minimum_required(VERSION 3.25)

# Every "<key>: <regex>" line of SPEC must match `said`, what the step `step` printed (exit `rc`).
function(expect_lines key step said rc)
  file(STRINGS "${SPEC}" expects REGEX "^${key}: ")
  foreach(line IN LISTS expects)
    string(REGEX REPLACE "^${key}: " "" pattern "${line}")
    if(NOT said MATCHES "${pattern}")
      message(FATAL_ERROR "the ${step} step (exit ${rc}) said:\n${said}\nwhich does not match:\n${pattern}")
    endif()
  endforeach()
endfunction()

file(REMOVE "${REPORT}")
set(common --id ${ID} --source-dir ${SOURCE_DIR} --report ${REPORT} --subject ${SUBJECT})
execute_process(COMMAND ${GRADETOOL} run ${common} -- ${GRADER} OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "the mistake passed every test: it is no mistake\n${out}")
endif()
# "expect-fresh: <regex>": the fresh-memory step (gradekit/fresh_memory.hpp) must say this; the
# transplant part then runs only when the spec has expect-located: lines too.
file(STRINGS "${SPEC}" fresh_expects REGEX "^expect-fresh: ")
file(STRINGS "${SPEC}" located_expects REGEX "^expect-located: ")
if(fresh_expects)
  execute_process(COMMAND ${GRADETOOL} fresh-memory ${common} -- ${GRADER}
    OUTPUT_VARIABLE fresh ERROR_VARIABLE fresh RESULT_VARIABLE rc)
  expect_lines(expect-fresh fresh-memory "${fresh}" ${rc})
  file(READ "${REPORT}" report)
  string(JSON named GET "${report}" edit)
  if(NOT named STREQUAL "")
    message(FATAL_ERROR "the fresh-memory step left the search's edit named: ${named}")
  endif()
  if(NOT located_expects)
    return()
  endif()
elseif(NOT located_expects)
  message(FATAL_ERROR "${SPEC} has no expect-located: line")
endif()
# "expect-search-edit: <regex>": the search names an edit of the learner's own line that is not
# theirs (another edit with the same effect); the transplant step must still run, find their line,
# and drop that edit. Without it, the search must name nothing (or the step would not run).
file(READ "${REPORT}" report)
string(JSON edit GET "${report}" edit)
file(STRINGS "${SPEC}" search_expects REGEX "^expect-search-edit: ")
if(search_expects)
  expect_lines(expect-search-edit search "${edit}" 0)
elseif(NOT edit STREQUAL "")
  message(FATAL_ERROR "the search named an edit, so the transplant step would not run: ${edit}")
endif()
execute_process(COMMAND ${GRADETOOL} transplant ${common} --build-dir ${BUILD_DIR} --target ${TARGET} --solution ${SOLUTION}
  OUTPUT_VARIABLE found ERROR_VARIABLE found RESULT_VARIABLE rc)
string(STRIP "${found}" found)
expect_lines(expect-located transplant "${found}" ${rc})
if(search_expects)
  file(READ "${REPORT}" report)
  string(JSON edit GET "${report}" edit)
  if(NOT edit STREQUAL "")
    message(FATAL_ERROR "the search's edit, not the learner's own, was kept beside their line: ${edit}")
  endif()
endif()
