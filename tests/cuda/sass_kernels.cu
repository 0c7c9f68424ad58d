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
// Version 7 in its default shape (both d_heads, fp16 and bf16), ...
HEADWISE_INSTANTIATE(attention_pipelined, 64, __half);
HEADWISE_INSTANTIATE(attention_pipelined, 128, __half);
HEADWISE_INSTANTIATE(attention_pipelined, 64, __nv_bfloat16);
HEADWISE_INSTANTIATE(attention_pipelined, 128, __nv_bfloat16);

// ... and in the other five at d_head 64, fp16: sass_check.sh holds each shape (by its place in
// FlashTiles) to the blocks per SM its registers were budgeted for.
static_assert(default_flash_tiles == FlashTiles::w4_r32_k64,
              "sass_check.sh's figures assume this default: update both (and the list below)");
#define HEADWISE_INSTANTIATE_TILES(tiles)                                        \
    template __global__ void attention_pipelined<64, __half, FlashTiles::tiles>( \
        const __half* q, const __half* k, const __half* v, const int* key_len, float* out, AttentionArgs a)
HEADWISE_INSTANTIATE_TILES(w4_r16_k32);
HEADWISE_INSTANTIATE_TILES(w4_r16_k64);
HEADWISE_INSTANTIATE_TILES(w4_r32_k32);
HEADWISE_INSTANTIATE_TILES(w4_r32_k32_s3);
HEADWISE_INSTANTIATE_TILES(w8_r16_k32);

}  // namespace headwise::kernels
