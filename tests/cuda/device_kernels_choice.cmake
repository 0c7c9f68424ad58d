# cmake -DWORK_DIR=dir -P tests/cuda/device_kernels_choice.cmake [-DCASE=on-without-nvcc]
# cmake/HeadwiseCuda.cmake's choice, with a stand-in nvidia-smi first on PATH: the device kernels are
# compiled where it lists a GPU (AUTO) or when asked (ON), and left out, saying why, where it lists
# none, where there is no nvcc, or when OFF; ON without nvcc stops the configure.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/HeadwiseCuda.cmake)

if(CASE STREQUAL "on-without-nvcc")  # run as a child below: a FATAL_ERROR ends the process
  headwise_device_kernels_wanted(built why ON "")
  return()
endif()

# A stand-in nvidia-smi in <dir> that prints <text> and exits <rc>.
function(stand_in dir text rc)
  file(MAKE_DIRECTORY "${dir}")
  file(WRITE "${dir}/nvidia-smi" "#!/bin/sh\necho '${text}'\nexit ${rc}\n")
  file(CHMOD "${dir}/nvidia-smi" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
endfunction()
stand_in("${WORK_DIR}/gpu" "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)" 0)
stand_in("${WORK_DIR}/no-gpu" "No devices were found" 6)
set(path "$ENV{PATH}")

set(failures "")
# expect(<PATH dir> <setting> <nvcc> <built> <why regex>)
function(expect dir setting nvcc want_built want_why)
  set(ENV{PATH} "${WORK_DIR}/${dir}:${path}")
  headwise_device_kernels_wanted(built why ${setting} "${nvcc}")
  if(NOT built STREQUAL want_built OR NOT why MATCHES "${want_why}")
    set(failures "${failures}\n  ${setting}, nvcc '${nvcc}', nvidia-smi from ${dir}: built ${built} ('${why}'), expected ${want_built} ('${want_why}')"
      PARENT_SCOPE)
  endif()
endfunction()
expect(gpu AUTO /opt/cuda/bin/nvcc ON "^$")
expect(no-gpu AUTO /opt/cuda/bin/nvcc OFF "nvidia-smi listed no GPU.*HEADWISE_DEVICE_KERNELS=ON compiles them")
expect(no-gpu ON /opt/cuda/bin/nvcc ON "^$")
expect(gpu OFF /opt/cuda/bin/nvcc OFF "HEADWISE_DEVICE_KERNELS is OFF")
expect(gpu AUTO "" OFF "built without nvcc")

execute_process(COMMAND ${CMAKE_COMMAND} -DCASE=on-without-nvcc -P ${CMAKE_CURRENT_LIST_FILE}
  OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT out MATCHES "HEADWISE_DEVICE_KERNELS is ON, but there is no nvcc")
  set(failures "${failures}\n  ON without nvcc: exit ${rc}, expected a failed configure naming the missing nvcc:\n${out}")
endif()

if(failures)
  message(FATAL_ERROR "the device kernels' choice went wrong:${failures}")
endif()
message(STATUS "the device kernels: compiled where a GPU is listed or when asked, left out with the reason elsewhere")
