// kernels/online.cuh -- version 2: one thread per query row, one pass, online softmax.
//
// Softmax needs the row maximum before the first exponential -- or does it? Keep a running
// maximum m, a running normaliser l = sum exp(s_j - m) and a running output acc = sum exp(s_j - m) v_j.
// When a new score raises the maximum from m to m', everything summed so far was scaled by
// exp(-m) instead of exp(-m'): multiply l and acc by exp(m - m') and carry on. At the end,
// out = acc / l is exactly softmax(s) v, and the N x N scratch of version 1 is gone.
//
// The query row and the accumulator sit in registers, so their length d_head must be known at
// compile time: the kernel is a template over D = d_head (instantiated for 8, 16, 32, 64, 128).
#pragma once

#include "kernels/offsets.cuh"
#include "kernels/portable.cuh"

namespace headwise::kernels {

struct OnlineShape {
    static constexpr int threads = 64;  // query rows per block
};

// grid (ceil(N / 64), H, B), block (64): thread x of block (bx, h, b) is query row bx * 64 + x.
//   q, k, v, out  (B, H, N, D)
//   key_len       (B)
template <int D>
__global__ void attention_online(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    const RowThread t = row_thread(a);
    const int i = t.row, N = a.seq;  // i: this thread's query row
    const std::size_t head = t.head;
    if (i >= N) return;
    const global_ptr<const float> q_row = slice(q, at(head + i, D), D);    // (D), row i
    const global_ptr<const float> k_bh = slice(k, at(head, D), at(N, D));  // (N, D)
    const global_ptr<const float> v_bh = slice(v, at(head, D), at(N, D));  // (N, D)
    const global_ptr<float> out_i = slice(out, at(head + i, D), D);        // (D)
    const int end = key_end(i, key_len[t.b], a.causal);

    float q_i[D];  // (D), this thread's query, scaled once here instead of every score later
    for (int c = 0; c < D; ++c) q_i[c] = q_row[c] * a.scale;

    float m = -INFINITY;  // running maximum of the scores seen so far
    float l = 0.0f;       // running sum of exp(s_j - m)
    float acc[D];         // (D), running sum of exp(s_j - m) v_j
    for (int c = 0; c < D; ++c) acc[c] = 0.0f;

    for (int j = 0; j < end; ++j) {
        float s = 0.0f;
        for (int c = 0; c < D; ++c) s += q_i[c] * k_bh[at(j, D, c)];
        const float m_new = fmaxf(m, s);
        const float rescale = expf(m - m_new);  // exp(-inf) = 0 on the first key
        const float p = expf(s - m_new);
        l = l * rescale + p;
        for (int c = 0; c < D; ++c) acc[c] = acc[c] * rescale + p * v_bh[at(j, D, c)];
        m = m_new;
    }
    for (int c = 0; c < D; ++c) out_i[c] = end > 0 ? acc[c] / l : 0.0f;
}

}  // namespace headwise::kernels
