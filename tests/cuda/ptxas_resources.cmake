# cmake -DNVCC=path/nvcc -DSOURCE_DIR=repo -DWORK_DIR=dir -P ptxas_resources.cmake
# What the H100 run showed to matter, checked in ptxas's report for sm_90 (no GPU needed):
#   - no fp32 kernel up to d_head 64 keeps a stack frame (version 3's scores once lived in local
#     memory: 256 bytes, a round trip through L1 per score);
#   - version 4 at d_head 64 fits at least 4 blocks of 4 warps on an SM (>= 25% occupancy) from
#     its registers and shared memory: 65536 registers handed out in 256s per warp, 228 KiB of
#     shared memory with 1 KiB reserved per block.
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${NVCC} -std=c++17 -O3 -arch=sm_90 -Xptxas -v -I ${SOURCE_DIR}/src -c
    ${SOURCE_DIR}/tests/cuda/ptxas_kernels.cu -o ${WORK_DIR}/ptxas_kernels_sm90.o
  OUTPUT_VARIABLE out ERROR_VARIABLE report RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed:\n${out}\n${report}")
endif()
# One entry per kernel: "name|stack|registers|smem".
string(REGEX MATCHALL "Compiling entry function '[^']+'[^\n]*\n[^\n]*Function properties[^\n]*\n[^\n]*bytes stack frame[^\n]*\n[^\n]*Used [0-9]+ registers[^\n]*"
  entries "${report}")
set(failures "")
set(seen 0)
foreach(entry IN LISTS entries)
  string(REGEX MATCH "Compiling entry function '([^']+)'" _ "${entry}")
  set(name "${CMAKE_MATCH_1}")
  string(REGEX MATCH "([0-9]+) bytes stack frame" _ "${entry}")
  set(stack "${CMAKE_MATCH_1}")
  string(REGEX MATCH "Used ([0-9]+) registers" _ "${entry}")
  set(regs "${CMAKE_MATCH_1}")
  set(smem 0)
  if(entry MATCHES "([0-9]+) bytes smem")
    set(smem "${CMAKE_MATCH_1}")
  endif()
  if(name MATCHES "attention_(online|tiled|warp)ILi(8|16|32|64)E")
    math(EXPR seen "${seen} + 1")
    if(NOT stack EQUAL 0)
      string(APPEND failures "\n  ${name}: ${stack} bytes of stack (local memory)")
    endif()
  endif()
  if(name MATCHES "attention_warpILi64ELi4E")
    math(EXPR per_warp "(${regs} * 32 + 255) / 256 * 256")
    math(EXPR by_regs "65536 / (${per_warp} * 4)")
    math(EXPR by_smem "233472 / (${smem} + 1024)")
    set(blocks ${by_regs})
    if(by_smem LESS blocks)
      set(blocks ${by_smem})
    endif()
    message(STATUS "warp, d_head 64: ${regs} registers, ${smem} B shared: ${blocks} blocks of 4 warps per SM")
    if(blocks LESS 4)
      string(APPEND failures "\n  ${name}: ${regs} registers and ${smem} B of shared memory fit ${blocks} blocks (< 25%)")
    endif()
  endif()
endforeach()
if(NOT seen EQUAL 12)
  string(APPEND failures "\n  found ${seen} of the 12 online/tiled/warp kernels up to d_head 64 in ptxas's report")
endif()
if(failures)
  message(FATAL_ERROR "ptxas (sm_90) reports:${failures}")
endif()
message(STATUS "sm_90: no stack in the fp32 kernels up to d_head 64; version 4 at >= 25% occupancy")
