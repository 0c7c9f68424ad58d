# cmake -DGRADER=<grader binary> [-DGRADER_ARGS=--grade-subject=<key>] -DGRADETOOL=<headwise-gradetool> -DID=ex01
#       -DSOURCE_DIR=<repo> -DSUBJECT_ARGS=--subject|<file>... -DREPORT=<json> -DEXPECT=solution|stub|<.mistake>
#       [-DTIMEOUT=<s>] [-DCHECK_ARGS=<check-report's step options, |-separated>] -P tests/grade/check_grader.cmake
#
# A meta-test: runs a grader on a known subject through headwise-gradetool's run step (sanitizers,
# crash diagnosis: what `headwise grade` does), then `headwise-gradetool check-report EXPECT REPORT`
# says whether the report is what that subject should get (gradekit/check.hpp): the solution
# passes, the stub fails every test with "not implemented yet", a catalogued mistake is named, a
# learner-style one is diagnosed as its expect lines say (gradekit/mistake.hpp), a located case
# is located by the steps that follow (CHECK_ARGS: their options and the grader).
cmake_minimum_required(VERSION 3.25)

string(REPLACE "|" ";" subject_args "${SUBJECT_ARGS}")
string(REPLACE "|" ";" check_args "${CHECK_ARGS}")
file(REMOVE "${REPORT}")
if(NOT DEFINED TIMEOUT)
  set(TIMEOUT 100)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env HEADWISE_GRADE_TIMEOUT=${TIMEOUT} ${GRADETOOL} run --id ${ID} --source-dir ${SOURCE_DIR} --report ${REPORT} ${subject_args}
    -- ${GRADER} ${GRADER_ARGS}
  OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
if(EXPECT STREQUAL "solution" AND NOT rc EQUAL 0)
  message(FATAL_ERROR "on the solution the grader should exit 0, it exited ${rc}\n--- grader output ---\n${out}")
elseif(NOT EXPECT STREQUAL "solution" AND rc EQUAL 0)
  message(FATAL_ERROR "the grader passed a subject it should reject (${EXPECT})\n--- grader output ---\n${out}")
endif()
execute_process(COMMAND ${GRADETOOL} check-report ${EXPECT} ${REPORT} --id ${ID} ${check_args}
  OUTPUT_VARIABLE said ERROR_VARIABLE said RESULT_VARIABLE check_rc)
if(NOT check_rc EQUAL 0)
  message(FATAL_ERROR "${said}\n--- grader output ---\n${out}")
endif()
