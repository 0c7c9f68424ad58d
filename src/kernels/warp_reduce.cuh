// kernels/warp_reduce.cuh -- butterfly reductions across lanes: over the 8 lanes of a row group
// in version 4 (group_max and group_sum in warp.cuh); exercise 06's warp_sum and warp_max are the
// same over all 32 lanes.
#pragma once

#include "kernels/portable.cuh"

namespace headwise::kernels {

// The largest and the sum of x over `Lanes` lanes (2 .. 32, a power of two: the lanes that differ
// only in their lowest log2(Lanes) bits), in every one of them: log2(Lanes) butterfly steps. In the
// step with offset o lane L combines its value with lane L ^ o's. After the steps Lanes / 2 .. o,
// lane L holds the result over the Lanes / o lanes that share its lowest log2(o) bits; after o = 1,
// over all of them -- in every lane, so nobody needs a broadcast at the end.
template <int Lanes>
__device__ __forceinline__ float lanes_max(float x) {
    static_assert(Lanes >= 2 && Lanes <= 32 && (Lanes & (Lanes - 1)) == 0, "a power of two up to a warp");
    for (int offset = Lanes / 2; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
}
template <int Lanes>
__device__ __forceinline__ float lanes_sum(float x) {
    static_assert(Lanes >= 2 && Lanes <= 32 && (Lanes & (Lanes - 1)) == 0, "a power of two up to a warp");
    for (int offset = Lanes / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

}  // namespace headwise::kernels
