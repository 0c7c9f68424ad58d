# The include-rule check can fail: on a copy of src/ in which reference/attention.hpp includes
# the model part (which reference may not), tests/architecture_test.cmake must fail and name the
# file and the rule. Run: cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch> -P <this file>
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK_DIR}")
file(COPY "${SOURCE_DIR}/src/headwise" DESTINATION "${WORK_DIR}/src")
file(COPY "${SOURCE_DIR}/src/CMakeLists.txt" DESTINATION "${WORK_DIR}/src")
file(READ "${WORK_DIR}/src/headwise/reference/attention.hpp" text)
string(REPLACE "#pragma once" "#pragma once\n#include \"headwise/model/bert.hpp\"" text "${text}")
file(WRITE "${WORK_DIR}/src/headwise/reference/attention.hpp" "${text}")
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK_DIR} -P ${CMAKE_CURRENT_LIST_DIR}/architecture_test.cmake
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE_RECURSE "${WORK_DIR}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the include check passed a reference -> model include:\n${out}${err}")
endif()
string(REGEX REPLACE "[ \n]+" " " err "${err}")
if(NOT err MATCHES "src/headwise/reference/attention.hpp: '#include \"headwise/model/bert.hpp\"' -- reference may include only base, fast")
  message(FATAL_ERROR "the include check failed, but without naming the file and the rule:\n${err}")
endif()
message(STATUS "a reference -> model include is caught, with its file and rule")
