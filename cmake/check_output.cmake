# cmake -DPROGRAM=exe -DEXPECTED=file [-DARGS="a;b"] [-DSAVE=file] -P check_output.cmake
# Runs PROGRAM and fails unless it exits 0 and every line of EXPECTED (a regular expression
# each; blank lines and lines starting with # are skipped) matches some line of its output.
# SAVE: where its output is kept when it exits 0 (tests/docs_test.cpp reads the lessons' runs
# there instead of running each lesson again); removed first, so a failed run leaves none.
if(SAVE)
  file(REMOVE "${SAVE}")
endif()
execute_process(COMMAND ${PROGRAM} ${ARGS}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${rc}\n${err}\n${out}")
endif()
if(SAVE)
  file(WRITE "${SAVE}" "${out}")
endif()
file(STRINGS "${EXPECTED}" patterns)
set(missing "")
foreach(p IN LISTS patterns)
  if(p STREQUAL "" OR p MATCHES "^#")
    continue()
  endif()
  if(NOT out MATCHES "${p}")
    string(APPEND missing "\n  ${p}")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "${PROGRAM}: output lacks lines matching:${missing}\n--- output ---\n${out}")
endif()
