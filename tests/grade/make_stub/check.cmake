# cmake -DSOLUTION=<in> -DEXPECTED=<hand-written stub> -DSTUB=<out> -DGRADETOOL=<headwise-gradetool> -P check.cmake
# Runs the stub generator and requires its output to equal the hand-written expected stub, byte for byte.
cmake_minimum_required(VERSION 3.25)
file(REMOVE "${STUB}")
execute_process(COMMAND ${GRADETOOL} stub ${SOLUTION} ${STUB}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_stub failed:\n${err}")
endif()
file(READ "${STUB}" got)
file(READ "${EXPECTED}" want)
if(NOT got STREQUAL want)
  message(FATAL_ERROR "make_stub produced\n${got}\n--- but the expected stub is\n${want}")
endif()
