# cmake -DSCRIPT=scripts/gpu-check -DEXPECT=text [-DCUDA_HOME=dir | -DSTAND_IN_CUDA=dir] -P expect_gpu_check_refusal.cmake
# Passes only if the script exits 2 with exactly one line on stderr that starts with EXPECT.
# STAND_IN_CUDA: a CUDA home made here whose bin/nvcc only exists, so that a machine without the
# toolkit still reaches the check that comes after nvcc's (the GPU's).
if(DEFINED STAND_IN_CUDA)
  file(MAKE_DIRECTORY "${STAND_IN_CUDA}/bin")
  file(WRITE "${STAND_IN_CUDA}/bin/nvcc" "#!/bin/sh\necho 'a stand-in nvcc: gpu-check must stop before it runs' >&2\nexit 1\n")
  file(CHMOD "${STAND_IN_CUDA}/bin/nvcc" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
  set(CUDA_HOME "${STAND_IN_CUDA}")
endif()
if(DEFINED CUDA_HOME)
  set(ENV{HEADWISE_CUDA_HOME} "${CUDA_HOME}")
endif()
execute_process(COMMAND ${SCRIPT} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 120)
string(STRIP "${err}" err_stripped)
string(REGEX MATCHALL "\n" newlines "${err_stripped}")
list(LENGTH newlines extra_lines)
if(NOT rc EQUAL 2 OR NOT extra_lines EQUAL 0 OR NOT err_stripped MATCHES "^${EXPECT}")
  message(FATAL_ERROR "expected exit 2 and one line starting with '${EXPECT}' on stderr, got exit ${rc}:\n"
    "stderr:\n${err}\nstdout:\n${out}")
endif()
message(STATUS "gpu-check refused as expected: ${err_stripped}")
