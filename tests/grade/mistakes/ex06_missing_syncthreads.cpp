// The tile in __shared__ memory was read without waiting for the other threads: some had not written their part yet, or had already overwritten it with the next tile.
// Call __syncthreads() after the block copies a tile (before anyone reads it) and again after computing (before the next copy), in every thread (lesson 06, step 5).
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
    constexpr int T = keys_per_tile<D>;
    __shared__ float ks[T][D];
    __shared__ float vs[T][D];
    const int first = int(blockIdx.x) * rows_per_block, i = first + int(threadIdx.x);
    const std::size_t base = (std::size_t(blockIdx.z) * a.heads + blockIdx.y) * a.seq * D;
    const int limit = a.causal ? imin(first + rows_per_block, a.seq) : a.seq;
    const int mine = i < a.seq ? (a.causal ? i + 1 : a.seq) : 0;
    float qi[D], o[D];
    for (int c = 0; c < D; ++c) qi[c] = i < a.seq ? q[base + i * D + c] * a.scale : 0.0f, o[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int start = 0; start < limit; start += T) {
        for (int e = int(threadIdx.x); e < T * D; e += rows_per_block)
            if (start + e / D < limit) ks[e / D][e % D] = k[base + start * D + e], vs[e / D][e % D] = v[base + start * D + e];
        for (int j = 0; j < T && start + j < mine; ++j) {
            float s = 0.0f;
            for (int c = 0; c < D; ++c) s += qi[c] * ks[j][c];
            const float m2 = fmaxf(m, s), r = expf(m - m2), p = expf(s - m2);
            l = l * r + p;
            for (int c = 0; c < D; ++c) o[c] = o[c] * r + p * vs[j][c];
            m = m2;
        }
    }
    if (i < a.seq)
        for (int c = 0; c < D; ++c) out[base + i * D + c] = o[c] / l;
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
