// The reduction stopped one step short (offsets 16, 8, 4, 2): each lane holds the sum (or maximum) over the 16 lanes of its own parity only.
// Five steps for 32 lanes: the loop runs while offset > 0, down to offset 1 (lesson 06, step 6).
#include "attention_kernels.hpp"

namespace headwise::ex06 {

template <int D>
__global__ void attention_online(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    not_implemented_yet();
}

template <int D>
__global__ void attention_tiled(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    not_implemented_yet();
}

__device__ float warp_sum(float x) {
    for (int offset = 16; offset > 1; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

__device__ float warp_max(float x) {
    for (int offset = 16; offset > 1; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
}

Tensor4 online_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule) {
    return kernels::with_d_head(int(q.shape()[3]), [&](auto d) {
        return launch_like_the_lesson(kernels::Version::online, &attention_online<decltype(d)::value>, q, k, v, causal,
                                      schedule);
    });
}

Tensor4 tiled_attention(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, Schedule schedule) {
    return kernels::with_d_head(int(q.shape()[3]), [&](auto d) {
        return launch_like_the_lesson(kernels::Version::tiled, &attention_tiled<decltype(d)::value>, q, k, v, causal,
                                      schedule);
    });
}

}  // namespace headwise::ex06
