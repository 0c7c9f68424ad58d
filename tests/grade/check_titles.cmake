# cmake -DSOURCE_DIR=<repo> -P tests/grade/check_titles.cmake
#
# Every grader test title reads as a sentence with sizes: within one parenthesis each size is
# named once ("N = 1, H = 1, d_head = 1, d_model = 32 / H = 4" named H twice and mixed two cases
# with a slash), so a learner can tell which case failed.
cmake_minimum_required(VERSION 3.25)

file(GLOB graders "${SOURCE_DIR}/tests/grade/ex[0-9][0-9]/[0-9][0-9]_*.cpp")
set(bad "")
set(checked 0)
foreach(f IN LISTS graders)
  file(READ "${f}" text)
  string(REGEX MATCHALL "TEST_CASE\\(\"[^\"]*\"" titles "${text}")
  foreach(title IN LISTS titles)
    math(EXPR checked "${checked} + 1")
    string(REGEX MATCHALL "\\([^()]*\\)" groups "${title}")
    foreach(group IN LISTS groups)
      string(REGEX MATCHALL "[A-Za-z_]+ = " names "${group}")
      set(unique ${names})
      list(REMOVE_DUPLICATES unique)
      list(LENGTH names n)
      list(LENGTH unique u)
      if(NOT n EQUAL u OR (n GREATER 0 AND group MATCHES " / "))
        string(APPEND bad "\n  ${f}: ${title}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(checked LESS 20)
  message(FATAL_ERROR "found only ${checked} grader test titles: is the pattern still right?")
endif()
if(bad)
  message(FATAL_ERROR "test titles that name a size twice in one parenthesis, or mix cases with ' / ':${bad}")
endif()
