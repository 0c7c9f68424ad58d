// kernels/backward_naive.cuh -- backward version 1: the gradients read literally, from a stored P.
//
// The forward computed S = Q K^T * scale, P = softmax(S) row by row (masked keys get 0) and
// O = P V. Given dO = dL/dO, the chain rule gives, one formula at a time (per (b, h); N x N for
// dP and dS, N x d_head for the rest):
//   dV = P^T dO
//   dP = dO V^T
//   dS = P o (dP - delta),  delta_i = sum_j P_ij dP_ij        (the softmax Jacobian of row i, in O(N))
//   dQ = dS K * scale,  dK = dS^T Q * scale
// Three kernels, every operand read from global memory where it is used, nothing kept in
// registers but scalars (the forward's version 1, backwards):
//   attention_weights                  thread (b, h, i): P_i = exp(S_i - lse_i), the forward's
//                                      weights as autograd keeps them: (B, H, N, N), masked keys 0
//   attention_backward_naive_rows      thread (b, h, i): dP_i, delta_i and dS_i (into a (B, H, N, N)
//                                      scratch), then dQ_i
//   attention_backward_naive_columns   thread (b, h, j): dV_j from column j of P, dK_j from column
//                                      j of dS
// dQ sums dS along a row, dK and dV along a column: a thread owning row i cannot also write rows
// of dK without racing every other row's thread, so the columns get their own kernel, and the
// launch boundary between the two is the barrier. P and dS are B*H*N^2 floats each: the traffic
// counted here is what version 2 (backward_flash.cuh) removes.
#pragma once

#include "kernels/offsets.cuh"
#include "kernels/portable.cuh"

namespace headwise::kernels {

struct NaiveBackwardShape {
    static constexpr int threads = 64;  // rows (or key columns) per block
};

// grid (ceil(N / 64), H, B), block (64): thread x of block (bx, h, b) is query row bx * 64 + x.
//   q, k   (B, H, N, d_head)
//   lse    (B, H, N): the forward's log-sum-exp of each row's scaled scores (tiled.cuh)
//   probs  (B, H, N, N): P, written whole (masked keys 0)
__global__ void attention_weights(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const int> key_len,
                                  global_ptr<const float> lse, global_ptr<float> probs, AttentionArgs a) {
    const RowThread t = row_thread(a);
    const int i = t.row, N = a.seq, D = a.d_head;  // i: this thread's query row
    const std::size_t head = t.head;
    if (i >= N) return;
    const global_ptr<const float> q_i = slice(q, at(head + i, D), D);      // (d_head)
    const global_ptr<const float> k_bh = slice(k, at(head, D), at(N, D));  // (N, d_head)
    const global_ptr<float> p_i = slice(probs, at(head + i, N), N);        // (N), row i of P
    const int end = key_end(i, key_len[t.b], a.causal);
    const float lse_i = end > 0 ? float(lse[head + i]) : 0.0f;

    // P_ij = exp(scale q_i . k_j - lse_i): softmax's exp(s_ij - m_i) / l_i in one step
    for (int j = 0; j < N; ++j) {
        if (j >= end) {
            p_i[j] = 0.0f;  // a masked key
            continue;
        }
        float s = 0.0f;
        for (int c = 0; c < D; ++c) s += q_i[c] * k_bh[at(j, D, c)];
        p_i[j] = expf(s * a.scale - lse_i);
    }
}

// grid (ceil(N / 64), H, B), block (64): thread x of block (bx, h, b) is query row bx * 64 + x.
//   k, v, d_out, dq  (B, H, N, d_head)
//   probs            (B, H, N, N): P from attention_weights
//   d_scores         (B, H, N, N): scratch, dS on return (rows of fully masked queries untouched)
__global__ void attention_backward_naive_rows(global_ptr<const float> k, global_ptr<const float> v,
                                              global_ptr<const int> key_len, global_ptr<const float> probs,
                                              global_ptr<const float> d_out, global_ptr<float> d_scores,
                                              global_ptr<float> dq, AttentionArgs a) {
    const RowThread t = row_thread(a);
    const int i = t.row, N = a.seq, D = a.d_head;  // i: this thread's query row
    const std::size_t head = t.head;
    if (i >= N) return;
    const global_ptr<const float> k_bh = slice(k, at(head, D), at(N, D));   // (N, d_head)
    const global_ptr<const float> v_bh = slice(v, at(head, D), at(N, D));   // (N, d_head)
    const global_ptr<const float> do_i = slice(d_out, at(head + i, D), D);  // (d_head)
    const global_ptr<const float> p_i = slice(probs, at(head + i, N), N);   // (N), row i of P
    const global_ptr<float> ds_i = slice(d_scores, at(head + i, N), N);     // (N), row i of dS
    const global_ptr<float> dq_i = slice(dq, at(head + i, D), D);           // (d_head)
    const int end = key_end(i, key_len[t.b], a.causal);

    // dP_ij = dO_i . v_j (kept in dS's row for now), delta_i = sum_j P_ij dP_ij
    float d_i = 0.0f;
    for (int j = 0; j < end; ++j) {
        float dp = 0.0f;
        for (int c = 0; c < D; ++c) dp += do_i[c] * v_bh[at(j, D, c)];
        ds_i[j] = dp;
        d_i += p_i[j] * dp;
    }
    // dS_ij = P_ij (dP_ij - delta_i)
    for (int j = 0; j < end; ++j) ds_i[j] = p_i[j] * (ds_i[j] - d_i);
    // dQ_i = sum_j dS_ij k_j * scale, one column at a time (a fully masked row: zeros)
    for (int c = 0; c < D; ++c) {
        float acc = 0.0f;
        for (int j = 0; j < end; ++j) acc += ds_i[j] * k_bh[at(j, D, c)];
        dq_i[c] = acc * a.scale;
    }
}

// grid (ceil(N / 64), H, B), block (64): thread x of block (bx, h, b) is key row bx * 64 + x.
//   q, d_out, dk, dv  (B, H, N, d_head)
//   probs, d_scores   (B, H, N, N): P and dS from the two kernels above
__global__ void attention_backward_naive_columns(global_ptr<const float> q, global_ptr<const int> key_len,
                                                 global_ptr<const float> probs, global_ptr<const float> d_out,
                                                 global_ptr<const float> d_scores, global_ptr<float> dk,
                                                 global_ptr<float> dv, AttentionArgs a) {
    const RowThread t = row_thread(a);
    const int j = t.row, N = a.seq, D = a.d_head;  // j: this thread's key row
    const std::size_t head = t.head;
    if (j >= N) return;
    const global_ptr<const float> q_bh = slice(q, at(head, D), at(N, D));          // (N, d_head)
    const global_ptr<const float> do_bh = slice(d_out, at(head, D), at(N, D));     // (N, d_head)
    const global_ptr<const float> p_bh = slice(probs, at(head, N), at(N, N));      // (N, N)
    const global_ptr<const float> ds_bh = slice(d_scores, at(head, N), at(N, N));  // (N, N)
    const global_ptr<float> dk_j = slice(dk, at(head + j, D), D);                  // (d_head)
    const global_ptr<float> dv_j = slice(dv, at(head + j, D), D);                  // (d_head)
    // The query rows that see key j: none when j is padding, i >= j under the causal mask.
    const int first = j < key_len[t.b] ? (a.causal ? j : 0) : N;

    // dV_j = sum_i P_ij dO_i, dK_j = sum_i dS_ij q_i * scale: column j of P and of dS
    for (int c = 0; c < D; ++c) {
        float acc_v = 0.0f, acc_k = 0.0f;
        for (int i = first; i < N; ++i) {
            acc_v += p_bh[at(i, N, j)] * do_bh[at(i, D, c)];
            acc_k += ds_bh[at(i, N, j)] * q_bh[at(i, D, c)];
        }
        dv_j[c] = acc_v;
        dk_j[c] = acc_k * a.scale;
    }
}

}  // namespace headwise::kernels
