// kernels/warp_reduce.cuh -- reductions over the 32 lanes of a warp, for version 5 (version 4
// reduces over the 8 lanes of a row group: group_max and group_sum in warp.cuh).
#pragma once

#include "kernels/portable.cuh"

namespace headwise::kernels {

// The largest and the sum of x over the 32 lanes of a warp, in every lane: five butterfly steps.
// In the step with offset o lane L combines its value with lane L ^ o's. After the steps 16 .. o,
// lane L holds the result over the 32 / o lanes that share its lowest log2(o) bits; after o = 1,
// over all 32 -- in every lane, so nobody needs a broadcast at the end.
__device__ __forceinline__ float warp_max(float x) {
    for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
}
__device__ __forceinline__ float warp_sum(float x) {
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

}  // namespace headwise::kernels
