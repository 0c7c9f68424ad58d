# cmake -DBUILD_DIR=build -DTARGET=headwise_kernels_device -DLIBRARY=path/lib.a -DNM=nm -P nvcc_kernels.cmake
# "nvcc compiles every kernel": builds the nvcc target (two compilers at a time, as its ctest
# PROCESSORS says; nvcc's own errors on failure), then checks that the library holds a host launch
# stub for each of the 60 kernels -- nvcc writes one per __global__ function it compiled -- and
# device code for each of sm_75, sm_80 and sm_90.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --parallel 2 --target ${TARGET}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed to compile the kernels:\n${out}\n${err}")
endif()
execute_process(COMMAND ${NM} ${LIBRARY} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} could not read ${LIBRARY}")
endif()
set(missing "")
set(kernels "15attention_naiveE")
foreach(d 8 16 32 64 128)
  list(APPEND kernels "16attention_onlineILi${d}EE" "15attention_tiledILi${d}EE" "14attention_warpILi${d}ELi4EEE")
endforeach()
foreach(d 16 32 64 128)  # wmma: fp16 tensor cores, d_head a multiple of 16
  list(APPEND kernels "21attention_tensor_coreILi${d}E6__halfEE")
endforeach()
foreach(d 64 128)  # mma.sync: versions 6 and 7, d_head 64 and 128; 7 in fp16 and bf16, in each of its
  # 6 tile shapes (kernels/flash_tiles.hpp's FlashTiles, by their place in the enum)
  list(APPEND kernels "13attention_mmaILi${d}E6__halfEE")
  foreach(tiles 0 1 2 3 4 5)
    list(APPEND kernels "19attention_pipelinedILi${d}E6__halfLNS0_10FlashTilesE${tiles}ELb1EEE"
      "19attention_pipelinedILi${d}E13__nv_bfloat16LNS0_10FlashTilesE${tiles}ELb1EEE")
  endforeach()
endforeach()
# The backward: naive's P, rows and columns; flash's D = rowsum(dO o O), key tiles, and the forward
# with its log-sum-exp.
list(APPEND kernels "17attention_weightsE" "29attention_backward_naive_rowsE" "32attention_backward_naive_columnsE"
  "24attention_backward_deltaE")
foreach(d 8 16 32 64 128)
  list(APPEND kernels "19attention_tiled_lseILi${d}EE" "24attention_backward_flashILi${d}EE")
endforeach()
foreach(k IN LISTS kernels)
  if(NOT symbols MATCHES "__device_stub__ZN8headwise7kernels${k}")
    string(APPEND missing "\n  no launch stub for ${k}")
  endif()
endforeach()
file(STRINGS ${LIBRARY} arch_lines REGEX "-arch sm_[0-9]+")
foreach(arch 75 80 90)
  if(NOT arch_lines MATCHES "-arch sm_${arch} ")
    string(APPEND missing "\n  no device code for sm_${arch}")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "nvcc built ${LIBRARY}, but it lacks:${missing}")
endif()
list(LENGTH kernels count)
message(STATUS "nvcc compiled ${count} kernels for sm_75, sm_80 and sm_90")
