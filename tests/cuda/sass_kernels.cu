// The tensor-core kernels of lesson 06, instantiated for nvcc alone: tests/cuda/sass_check.sh
// compiles this file for sm_90 and reads the machine code (no GPU needed).
#include "kernels/flash.cuh"
#include "kernels/tensor_core.cuh"

namespace headwise::kernels {

#define HEADWISE_INSTANTIATE(kernel, D, T)                                                                    \
    template __global__ void kernel<D, T>(const T* q, const T* k, const T* v, const int* key_len, float* out, \
                                          AttentionArgs a)

HEADWISE_INSTANTIATE(attention_tensor_core, 64, __half);
HEADWISE_INSTANTIATE(attention_tensor_core, 128, __half);
HEADWISE_INSTANTIATE(attention_mma, 64, __half);
HEADWISE_INSTANTIATE(attention_mma, 128, __half);
HEADWISE_INSTANTIATE(attention_pipelined, 64, __half);
HEADWISE_INSTANTIATE(attention_pipelined, 128, __half);
HEADWISE_INSTANTIATE(attention_pipelined, 64, __nv_bfloat16);
HEADWISE_INSTANTIATE(attention_pipelined, 128, __nv_bfloat16);

}  // namespace headwise::kernels
