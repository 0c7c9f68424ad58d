// The threads read the K/V tile in __shared__ memory before all of them had written it: no __syncthreads() between the copy and the maths. The emulator caught it as a race on the shared tile and named both lines.
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
    (void)key_len;
    constexpr int Bc = keys_per_tile<D>;
    __shared__ shared_tile<float, Bc, D> k_tile;  // (Bc, D): element (r, c) is k_tile(r, c)
    __shared__ shared_tile<float, Bc, D> v_tile;  // (Bc, D)

    const int q0 = int(blockIdx.x) * rows_per_block;  // first query row of this block
    const int i = q0 + int(threadIdx.x);               // this thread's row; may be >= N
    const std::size_t head = (std::size_t(blockIdx.z) * a.heads + blockIdx.y) * a.seq;
    const global_ptr<const float> keys = slice(k, head * D, std::size_t(a.seq) * D);    // (N, D)
    const global_ptr<const float> values = slice(v, head * D, std::size_t(a.seq) * D);  // (N, D)
    // Keys any row of the block may see: with the causal mask, none past the block's last row.
    const int block_end = a.causal ? imin(q0 + rows_per_block, a.seq) : a.seq;
    const int end = i >= a.seq ? 0 : (a.causal ? i + 1 : a.seq);  // keys this row may see

    float q_i[D], acc[D];  // (D) each
    for (int c = 0; c < D; ++c) q_i[c] = 0.0f, acc[c] = 0.0f;
    if (i < a.seq) {
        const global_ptr<const float> q_row = slice(q, (head + i) * D, D);  // (D)
        for (int c = 0; c < D; ++c) q_i[c] = q_row[c] * a.scale;
    }
    float m = -INFINITY, l = 0.0f;
    for (int k0 = 0; k0 < block_end; k0 += Bc) {  // the last tile may be partial
        for (int e = int(threadIdx.x); e < Bc * D; e += rows_per_block) {  // every thread helps, rows >= N too
            const int r = e / D, c = e % D;
            if (k0 + r < block_end) k_tile(r, c) = keys[(k0 + r) * D + c], v_tile(r, c) = values[(k0 + r) * D + c];
        }

        const int cols = imin(Bc, end - k0);  // this row's visible keys in the tile
        if (cols > 0) {
            float s[Bc];
            float m_new = m;
            for (int j = 0; j < cols; ++j) {
                s[j] = 0.0f;
                for (int c = 0; c < D; ++c) s[j] += q_i[c] * k_tile(j, c);
                m_new = fmaxf(m_new, s[j]);
            }
            const float rescale = expf(m - m_new);  // once per tile
            l *= rescale;
            for (int c = 0; c < D; ++c) acc[c] *= rescale;
            for (int j = 0; j < cols; ++j) {
                const float p = expf(s[j] - m_new);
                l += p;
                for (int c = 0; c < D; ++c) acc[c] += p * v_tile(j, c);
            }
            m = m_new;
        }
        __syncthreads();  // everyone is done with the tile before it is overwritten
    }
    if (i < a.seq) {
        const global_ptr<float> out_row = slice(out, (head + i) * D, D);  // (D)
        for (int c = 0; c < D; ++c) out_row[c] = acc[c] / l;
    }
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
