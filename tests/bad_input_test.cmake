# Runs the lessons with bad flags ("lesson|flags" per case): each must exit 2 with exactly one line on stderr.
# cmake -DLESSON_DIR=build/lessons -P bad_input_test.cmake
set(cases
  "01_single_head|--seq 0"
  "01_single_head|--d-model -3"
  "01_single_head|--batch abc"
  "01_single_head|--seq 4000000000"
  "01_single_head|--seed -1"
  "01_single_head|--no-such-flag"
  "01_single_head|--seq"
  "01_single_head|--batch 64 --seq 4096 --d-model 8192"
  "01_single_head|--batch 64 --seq 4096 --d-model 1024"
  "02_split_merge|--heads 7 --d-model 64"
  "02_split_merge|--heads 0"
  "02_split_merge|--seq -5"
  "02_split_merge|--batch 64 --seq 4096 --d-model 8192"
  "02_split_merge|--batch 64 --seq 4096 --d-model 1024"
  "03_multi_head|--heads 7 --d-model 64"
  "03_multi_head|--heads 300"
  "03_multi_head|--cross-seq 0"
  "03_multi_head|--cross-seq 99999"
  "03_multi_head|--batch 64 --seq 4096 --d-model 1024"
  "04_causal_mask|--heads 7 --d-model 64"
  "04_causal_mask|--changed-token 5"
  "04_causal_mask|--changed-token -1"
  "04_causal_mask|--seq 0"
  "04_causal_mask|--batch 64 --seq 4096 --heads 64"
  "05_parameter_count|--heads 7 --d-model 64"
  "05_parameter_count|--d-model 0"
  "05_parameter_count|--context 0"
  "05_parameter_count|--context 99999999999"
  "05_parameter_count|--batch 2"
  "06_cuda_kernel|--d-head 12"
  "06_cuda_kernel|--seq 0"
  "06_cuda_kernel|--heads -2"
  "06_cuda_kernel|--schedule warps"
  "06_cuda_kernel|--repeats 0"
  "06_cuda_kernel|--seq 4096 --heads 8"
)
set(failures "")
set(count 0)
foreach(case IN LISTS cases)
  string(FIND "${case}" "|" bar)
  string(SUBSTRING "${case}" 0 ${bar} lesson)
  math(EXPR start "${bar} + 1")
  string(SUBSTRING "${case}" ${start} -1 arg_string)
  separate_arguments(args UNIX_COMMAND "${arg_string}")
  set(exe "${LESSON_DIR}/${lesson}")
  if(NOT EXISTS "${exe}")
    continue()
  endif()
  math(EXPR count "${count} + 1")
  execute_process(COMMAND "${exe}" ${args} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc
    TIMEOUT 60)
  string(STRIP "${err}" err_stripped)
  string(REGEX MATCHALL "\n" newlines "${err_stripped}")
  list(LENGTH newlines extra_lines)
  if(NOT rc EQUAL 2 OR err_stripped STREQUAL "" OR extra_lines GREATER 0)
    string(APPEND failures "\n  ${lesson} ${args}: exit ${rc}, stderr: ${err}")
  else()
    message(STATUS "${lesson} ${args} -> exit 2: ${err_stripped}")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "no lesson binaries found in ${LESSON_DIR}")
endif()
if(failures)
  message(FATAL_ERROR "bad input not answered with one line and exit code 2:${failures}")
endif()
