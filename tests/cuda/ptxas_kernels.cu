// The fp32 kernels of lesson 06 (versions 2-4) up to d_head 64, instantiated for nvcc alone:
// tests/cuda/ptxas_resources.cmake compiles this file for sm_90 and reads ptxas's report (no GPU
// needed). The build compiles every kernel for every architecture (src/kernels/device.cu); this
// file holds only the 12 the test checks, so the test compiles in seconds.
#include "kernels/online.cuh"
#include "kernels/tiled.cuh"
#include "kernels/warp.cuh"

namespace headwise::kernels {

#define HEADWISE_INSTANTIATE(kernel, D)                                                          \
    template __global__ void kernel<D>(global_ptr<const float> q, global_ptr<const float> k,     \
                                       global_ptr<const float> v, global_ptr<const int> key_len, \
                                       global_ptr<float> out, AttentionArgs a)
#define HEADWISE_INSTANTIATE_FP32(D)           \
    HEADWISE_INSTANTIATE(attention_online, D); \
    HEADWISE_INSTANTIATE(attention_tiled, D);  \
    HEADWISE_INSTANTIATE(attention_warp, D)

HEADWISE_INSTANTIATE_FP32(8);
HEADWISE_INSTANTIATE_FP32(16);
HEADWISE_INSTANTIATE_FP32(32);
HEADWISE_INSTANTIATE_FP32(64);

}  // namespace headwise::kernels
