# The architecture check can fail, and names what it finds: on a copy of src/ and
# docs/architecture.md in which reference/attention.hpp includes the model part (which reference
# may not), src/kernels/ has a header its README does not name, and the diagram has no train/
# node, tests/architecture_test.cmake must fail and name the file and rule, the header and the folder.
# Run: cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch> -P <this file>
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK_DIR}")
file(COPY "${SOURCE_DIR}/src" DESTINATION "${WORK_DIR}")
file(COPY "${SOURCE_DIR}/docs/architecture.md" DESTINATION "${WORK_DIR}/docs")
file(READ "${WORK_DIR}/src/headwise/reference/attention.hpp" text)
string(REPLACE "#pragma once" "#pragma once\n#include \"headwise/model/bert.hpp\"" text "${text}")
file(WRITE "${WORK_DIR}/src/headwise/reference/attention.hpp" "${text}")
file(WRITE "${WORK_DIR}/src/kernels/unnamed.cuh" "#pragma once\n")
file(READ "${WORK_DIR}/docs/architecture.md" text)
string(REPLACE "train/ (headwise::train)" "training (headwise::train)" text "${text}")
file(WRITE "${WORK_DIR}/docs/architecture.md" "${text}")
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK_DIR} -P ${CMAKE_CURRENT_LIST_DIR}/architecture_test.cmake
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE_RECURSE "${WORK_DIR}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the architecture check passed a reference -> model include, an unnamed header and a diagram "
                      "without train/:\n${out}${err}")
endif()
string(REGEX REPLACE "[ \n]+" " " err "${err}")
foreach(expected
    "src/headwise/reference/attention.hpp: '#include \"headwise/model/bert.hpp\"' -- reference may include only base, fast"
    "src/kernels/README.md does not name its header unnamed.cuh"
    "the diagram has no node for src/headwise/train/")
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the architecture check failed, but without saying \"${expected}\":\n${err}")
  endif()
endforeach()
message(STATUS "a reference -> model include, an unnamed header and a folder missing from the diagram are each caught")
