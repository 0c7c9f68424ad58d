// kernels/naive.cuh -- version 1: one thread per query row, three passes, an N x N scratch.
//
// The formula read literally. Thread (b, h, i) owns query row i of head h of sequence b:
//   pass 1  scores[j] = q_i . k_j * scale   for every visible key j, keeping the row maximum m
//   pass 2  scores[j] = exp(scores[j] - m)  and their sum l
//   pass 3  out_i[c]  = sum_j scores[j] v_j[c] / l
// The row of scores lives in global memory (a (B, H, N, N) scratch buffer) and every operand is
// read from global memory where it is used: nothing is kept in registers but scalars. That makes
// it work for any d_head and makes it slow: the counted traffic is the point of comparison.
#pragma once

#include "kernels/offsets.cuh"
#include "kernels/portable.cuh"

namespace headwise::kernels {

struct NaiveShape {
    static constexpr int threads = 64;  // query rows per block
};

// grid (ceil(N / 64), H, B), block (64): thread x of block (bx, h, b) is query row bx * 64 + x.
//   q, k, v, out  (B, H, N, d_head)
//   key_len       (B)
//   scratch       (B, H, N, N)
__global__ void attention_naive(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                global_ptr<const int> key_len, global_ptr<float> scratch, global_ptr<float> out,
                                AttentionArgs a) {
    const RowThread t = row_thread(a);
    const int i = t.row, N = a.seq, D = a.d_head;                          // i: this thread's query row
    const std::size_t head = t.head;                                       // first row of (b, h)
    if (i >= N) return;                                                    // the last block's spare threads
    const global_ptr<const float> q_i = slice(q, at(head + i, D), D);      // (d_head)
    const global_ptr<const float> k_bh = slice(k, at(head, D), at(N, D));  // (N, d_head)
    const global_ptr<const float> v_bh = slice(v, at(head, D), at(N, D));  // (N, d_head)
    const global_ptr<float> scores = slice(scratch, at(head + i, N), N);   // (N), this row
    const global_ptr<float> out_i = slice(out, at(head + i, D), D);        // (d_head)
    const int end = key_end(i, key_len[t.b], a.causal);

    // pass 1: scores and their maximum
    float m = -INFINITY;
    for (int j = 0; j < end; ++j) {
        float s = 0.0f;
        for (int c = 0; c < D; ++c) s += q_i[c] * k_bh[at(j, D, c)];
        s *= a.scale;
        scores[j] = s;
        m = fmaxf(m, s);
    }
    // pass 2: exponentials, shifted by the maximum so none overflows, and their sum
    float l = 0.0f;
    for (int j = 0; j < end; ++j) {
        const float e = expf(scores[j] - m);
        scores[j] = e;
        l += e;
    }
    // pass 3: the weighted sum of the values, one output column at a time
    for (int c = 0; c < D; ++c) {
        float acc = 0.0f;
        for (int j = 0; j < end; ++j) acc += scores[j] * v_bh[at(j, D, c)];
        out_i[c] = end > 0 ? acc / l : 0.0f;  // a fully masked row is zeros, never 0/0
    }
}

}  // namespace headwise::kernels
