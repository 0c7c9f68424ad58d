# cmake/HeadwiseCuda.cmake -- where nvcc is, and whether this build compiles the device kernels.
#
# The device kernels (src/kernels/device.cu: 60 kernels for sm_75, sm_80 and sm_90) take two
# minutes of nvcc on two cores, and they only run on an NVIDIA GPU. So they are compiled where
# one can run them or where they are asked for:
#   HEADWISE_DEVICE_KERNELS=AUTO  (the default) when nvidia-smi lists a GPU at configure time;
#   HEADWISE_DEVICE_KERNELS=ON    always (scripts/gpu-check, scripts/ci-extras nvcc);
#   HEADWISE_DEVICE_KERNELS=OFF   never.
# Without them, headwise::kernels_device is a stub whose status() says why, and every kernel still
# runs on the CPU emulator. nvcc itself stays useful without them: the ptxas and SASS tests
# (tests/cuda) compile the one file they check with it.

# headwise_find_nvcc(<out>): the CUDA compiler -- CMAKE_CUDA_COMPILER when given, else
# /usr/local/cuda/bin/nvcc, else nvcc on PATH; "" when there is none.
function(headwise_find_nvcc out)
  if(CMAKE_CUDA_COMPILER)
    set(${out} "${CMAKE_CUDA_COMPILER}" PARENT_SCOPE)
    return()
  endif()
  find_program(HEADWISE_NVCC_PROGRAM nvcc HINTS /usr/local/cuda/bin NO_CACHE)
  if(NOT HEADWISE_NVCC_PROGRAM)
    set(HEADWISE_NVCC_PROGRAM "")
  endif()
  set(${out} "${HEADWISE_NVCC_PROGRAM}" PARENT_SCOPE)
endfunction()

# headwise_gpu_present(<out>): ON when `nvidia-smi -L` lists at least one GPU.
function(headwise_gpu_present out)
  set(${out} OFF PARENT_SCOPE)
  find_program(HEADWISE_NVIDIA_SMI nvidia-smi NO_CACHE)
  if(NOT HEADWISE_NVIDIA_SMI)
    return()
  endif()
  execute_process(COMMAND ${HEADWISE_NVIDIA_SMI} -L OUTPUT_VARIABLE gpus ERROR_QUIET RESULT_VARIABLE rc TIMEOUT 30)
  if(rc EQUAL 0 AND gpus MATCHES "GPU [0-9]+:")
    set(${out} ON PARENT_SCOPE)
  endif()
endfunction()

# headwise_device_kernels_wanted(<out> <why> <setting> <nvcc>): whether to compile the device kernels
# for HEADWISE_DEVICE_KERNELS = <setting> (AUTO, ON, OFF) with <nvcc> ("" when there is none), and
# in <why> the reason when not (what the stub's status() says, in lesson 06's words; no ';' in it:
# it is passed on in CMake lists).
function(headwise_device_kernels_wanted out why setting nvcc)
  set(${out} OFF PARENT_SCOPE)
  if(NOT setting MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "HEADWISE_DEVICE_KERNELS is AUTO, ON or OFF, not '${setting}'")
  endif()
  if(setting STREQUAL "OFF")
    set(${why} "built without the device kernels: HEADWISE_DEVICE_KERNELS is OFF" PARENT_SCOPE)
    return()
  endif()
  if(NOT nvcc)
    if(setting STREQUAL "ON")
      message(FATAL_ERROR "HEADWISE_DEVICE_KERNELS is ON, but there is no nvcc (install the CUDA toolkit, "
        "or name it with -DCMAKE_CUDA_COMPILER=/path/to/nvcc)")
    endif()
    set(${why} "built without nvcc: CMake found no CUDA compiler" PARENT_SCOPE)
    return()
  endif()
  if(setting STREQUAL "AUTO")
    headwise_gpu_present(gpu)
    if(NOT gpu)
      set(${why} "this build left out the device kernels, as nvidia-smi listed no GPU when it was configured: -DHEADWISE_DEVICE_KERNELS=ON compiles them"
        PARENT_SCOPE)
      return()
    endif()
  endif()
  set(${out} ON PARENT_SCOPE)
  set(${why} "" PARENT_SCOPE)
endfunction()
