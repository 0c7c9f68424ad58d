# cmake -DBUILD_DIR=build -DTARGET=headwise_grade_ex01 -DID=ex01 -DSOURCE_DIR=. -DREPORT=build/grade/ex01.json
#       -P tests/grade/build_exercise.cmake
#
# The "build" step of grading one exercise (a ctest fixture): builds that exercise's grader and
# nothing else. When it does not compile, the report says so with the compiler's first error,
# {"id":"ex01","compiled":false,...}, and only this exercise fails: the others build on their own.
cmake_minimum_required(VERSION 3.25)

# A JSON string literal holding `text` (one line: tabs and carriage returns become spaces).
function(json_string text out)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REGEX REPLACE "[\t\r\n]" " " text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

function(write_report compiled message)
  json_string("${ID}" id)
  json_string("${message}" message)
  set(json "{\"id\": ${id}, \"compiled\": ${compiled}, \"passed\": 0, \"total\": 0, \"failures\": [{\"test\": \"build\", \"message\": ${message}, \"mistake\": null, \"explanation\": \"\"}]}\n")
  file(WRITE "${REPORT}.tmp" "${json}")
  file(RENAME "${REPORT}.tmp" "${REPORT}")
endfunction()

get_filename_component(report_dir "${REPORT}" DIRECTORY)
file(MAKE_DIRECTORY "${report_dir}")
file(REMOVE "${REPORT}")

execute_process(COMMAND ${CMAKE_COMMAND} --build "${BUILD_DIR}" --target ${TARGET}
  OUTPUT_VARIABLE log ERROR_VARIABLE log RESULT_VARIABLE rc)

if(rc EQUAL 0)
  # Overwritten by the grader as soon as it starts; left as is if it never does.
  write_report(true "compiled; the grader has not run yet")
  return()
endif()

# The first line the compiler or linker flagged, with paths relative to the repository.
set(first "")
string(REPLACE "\r" "" log "${log}")
string(REGEX MATCHALL "[^\n]*(error:|undefined reference)[^\n]*" errors "${log}")
if(errors)
  list(GET errors 0 first)
endif()
if(first STREQUAL "")
  set(first "the build failed (no compiler error found in its output; see below)")
endif()
string(REPLACE "${SOURCE_DIR}/" "" first "${first}")
write_report(false "${first}")
# NOTICE prints as is; FATAL_ERROR would re-wrap the compiler's lines.
message(NOTICE "${log}\n${ID} does not compile. The first error:\n  ${first}\n")
message(FATAL_ERROR "${ID}: the build failed")
