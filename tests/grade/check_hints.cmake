# cmake -DSOURCE_DIR=<repo> -P tests/grade/check_hints.cmake
#
# Every hint quotes only messages the grader really prints: each double-quoted phrase of three
# words or more in exercises/*/HINTS.md must appear, word for word, in the grader's sources
# (tests/grade/*.cpp, *.hpp, src/gradekit/*.cpp), in the emulator's (src/emulator/*.cpp: exercise
# 06's report quotes its launch errors whole) or be a catalogued mistake's name or explanation.
cmake_minimum_required(VERSION 3.25)

set(corpus "")
file(GLOB sources "${SOURCE_DIR}/tests/grade/*.cpp" "${SOURCE_DIR}/tests/grade/*.hpp" "${SOURCE_DIR}/src/gradekit/*.cpp"
  "${SOURCE_DIR}/src/emulator/*.cpp")
foreach(f IN LISTS sources)
  file(READ "${f}" text)
  string(APPEND corpus "${text}\n")
endforeach()
file(GLOB mistakes "${SOURCE_DIR}/tests/grade/mistakes/*.mistake")
foreach(f IN LISTS mistakes)
  file(STRINGS "${f}" said REGEX "^(mistake|why|fix): ")  # its name and the two lines the report prints
  string(APPEND corpus "${said}\n")
endforeach()
string(REGEX REPLACE "[ \t\r\n]+" " " corpus "${corpus}")

file(GLOB hints "${SOURCE_DIR}/exercises/*/HINTS.md")
set(bad "")
set(checked 0)
foreach(f IN LISTS hints)
  file(READ "${f}" text)
  string(REGEX REPLACE "[ \t\r\n]+" " " text "${text}")
  string(REGEX MATCHALL "\"[^\"]+\"" quotes "${text}")
  foreach(q IN LISTS quotes)
    string(REGEX REPLACE "^\"(.*)\"$" "\\1" phrase "${q}")
    string(REGEX MATCHALL "[^ ]+" words "${phrase}")
    list(LENGTH words n)
    if(n LESS 3)
      continue()
    endif()
    math(EXPR checked "${checked} + 1")
    string(FIND "${corpus}" "${phrase}" at)
    if(at EQUAL -1)
      file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
      string(APPEND bad "\n  ${rel}: \"${phrase}\"")
    endif()
  endforeach()
endforeach()
if(NOT bad STREQUAL "")
  message(FATAL_ERROR "these hints quote messages the grader never prints:${bad}")
endif()
if(checked EQUAL 0)
  message(FATAL_ERROR "no quoted grader message found in any HINTS.md: the check checks nothing")
endif()
message(STATUS "${checked} quoted grader messages in the hints, each printed by the grader")
