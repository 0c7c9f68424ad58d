// When a new score raised the running maximum, l was rescaled by exp(m_old - m_new) but acc was not: the terms summed earlier keep their old, too-large weight.
// Whenever m changes, multiply l and every acc[c] by the same exp(m_old - m_new) before adding the new key (lesson 06, step 4).
#include "attention_kernels.hpp"

namespace headwise::ex06 {

template <int D>
__global__ void attention_online(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= a.seq) return;
    const std::size_t base = (std::size_t(blockIdx.z) * a.heads + blockIdx.y) * a.seq * D;  // (b, h) block of q, k, v
    float acc[D] = {};
    float m = -INFINITY, l = 0.0f;
    const int last = a.causal ? i : a.seq - 1;
    for (int j = 0; j <= last; ++j) {
        float s = 0.0f;
        for (int c = 0; c < D; ++c) s += q[base + i * D + c] * k[base + j * D + c];
        s *= a.scale;
        const float m_new = fmaxf(m, s);
        const float p = expf(s - m_new);
        l = l * expf(m - m_new) + p;
        for (int c = 0; c < D; ++c) acc[c] += p * v[base + j * D + c];
        m = m_new;
    }
    for (int c = 0; c < D; ++c) out[base + i * D + c] = acc[c] / l;
}

template <int D>
__global__ void attention_tiled(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    not_implemented_yet();
}

__device__ float warp_sum(float x) {
    (void)x;
    not_implemented_yet();
}

__device__ float warp_max(float x) {
    (void)x;
    not_implemented_yet();
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
