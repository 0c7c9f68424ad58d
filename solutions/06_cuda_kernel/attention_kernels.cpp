// Exercise 06 -- attention as CUDA kernels: online softmax (part 1), tiled (part 2, stretch), and
// the warp reductions of lesson 06's versions 4 and 5 (part 3, optional).
//
// Read lesson 06 first (./headwise run 6, lessons/06_cuda_kernel.cpp, src/kernels/*.cuh).
// Grade with:  ./headwise grade 6    (or: ctest --preset grade -L ex06)
//
// Each kernel runs once per CUDA thread; thread x of block (bx, h, b) owns query row
// i = bx * 64 + x of head h of sequence b (rows i >= N exist in the last block: mind them).
// Index global memory through slices: slice(k, offset, count) is the `count` floats from
// `offset`, and the emulator stops you (naming block and thread) the moment you index outside.
// The grader compares with the CPU reference in double precision, on N = 1, 17, 64, 100, 130,
// d_head = 8 and 64, causal and not, and runs your tiled kernel's threads in two different orders:
// a correct kernel gives the same answer either way. Parts are graded as milestones: the grade
// says "part 1 of 2 done" as soon as part 1's tests pass, whatever parts 2 and 3 do.
#include "attention_kernels.hpp"

namespace headwise::ex06 {

// Part 1. One thread per query row, one pass over the keys: a running maximum m, a running
// normaliser l = sum_j exp(s_j - m) and a running output acc = sum_j exp(s_j - m) v_j.
template <int D>
__global__ void attention_online(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    // BEGIN SOLUTION
    (void)key_len;  // every sequence has all N keys here
    const int i = int(blockIdx.x * blockDim.x + threadIdx.x);  // query row
    if (i >= a.seq) return;
    const std::size_t head = (std::size_t(blockIdx.z) * a.heads + blockIdx.y) * a.seq;  // row 0 of (b, h)
    const global_ptr<const float> q_row = slice(q, (head + i) * D, D);                 // (D)
    const global_ptr<const float> keys = slice(k, head * D, std::size_t(a.seq) * D);    // (N, D)
    const global_ptr<const float> values = slice(v, head * D, std::size_t(a.seq) * D);  // (N, D)
    const int end = a.causal ? i + 1 : a.seq;  // keys 0 .. end-1 are visible

    float q_i[D];  // (D), pre-scaled
    float acc[D];  // (D)
    for (int c = 0; c < D; ++c) q_i[c] = q_row[c] * a.scale, acc[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < end; ++j) {
        float s = 0.0f;
        for (int c = 0; c < D; ++c) s += q_i[c] * keys[j * D + c];
        const float m_new = fmaxf(m, s);
        const float rescale = expf(m - m_new);  // what was summed under the old maximum is worth this much now
        const float p = expf(s - m_new);
        l = l * rescale + p;
        for (int c = 0; c < D; ++c) acc[c] = acc[c] * rescale + p * values[j * D + c];
        m = m_new;
    }
    const global_ptr<float> out_row = slice(out, (head + i) * D, D);  // (D)
    for (int c = 0; c < D; ++c) out_row[c] = acc[c] / l;
    return;
    // STUB
    // TODO(ex06): part 1. Find your query row i (return if i >= a.seq) and the (N, D) block of k
    // and v for head blockIdx.y of sequence blockIdx.z. Keep q_i[D] (times a.scale) and acc[D] in
    // per-thread arrays; for each visible key j (j <= i when a.causal) compute s = q_i . k_j and
    // update m, l and acc -- rescaling l AND acc by exp(m_old - m_new) whenever the maximum grows.
    // Finally out_i = acc / l. (lesson 06, step 4; src/kernels/online.cuh shows one way.)
    not_implemented_yet();
    // END SOLUTION
}

// Part 2 (stretch). The same mathematics, but the 64 threads of a block share each tile of
// keys_per_tile<D> K and V rows: they copy it into __shared__ memory together, wait for each
// other, compute, and wait again before the next tile overwrites it. Declare the tiles as
// shared_tile (as lesson 06's versions 4 and 5 do): the emulator then checks every access, and a
// missing __syncthreads() is reported as a race naming the two lines of your kernel.
template <int D>
__global__ void attention_tiled(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a) {
    // BEGIN SOLUTION
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
        __syncthreads();  // the tile is complete before anyone reads it

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
    return;
    // STUB
    // TODO(ex06): part 2 (stretch). Declare two tiles for K and V,
    // `__shared__ shared_tile<float, keys_per_tile<D>, D> k_tile;` (element (r, c): k_tile(r, c)). Keep q_i, acc, m, l per thread as in part 1, but loop over the keys a tile at a time:
    // all 64 threads copy the tile's rows (those below N, or below the block's last row + 1 when
    // causal) -- including threads whose own row i >= N, which must not return early -- then
    // __syncthreads(), then each thread updates m, l, acc with its visible keys of the tile, then
    // __syncthreads() again. Do not forget the last, partial tile. (lesson 06, step 5)
    not_implemented_yet();
    // END SOLUTION
}

// Part 3 (optional). The sum over the warp in five steps: in the step with offset o (16, 8, 4,
// 2, 1) every lane adds the value of lane (its own ^ o), read with
// __shfl_xor_sync(0xffffffff, x, o). After the last step every lane holds the whole sum.
__device__ float warp_sum(float x) {
    // BEGIN SOLUTION
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
    // STUB
    // TODO(ex06): part 3 (optional). Five butterfly steps, offsets 16, 8, 4, 2, 1, all 32 lanes
    // taking part in each (mask 0xffffffff). (lesson 06, step 6; src/kernels/warp_reduce.cuh)
    (void)x;
    not_implemented_yet();
    // END SOLUTION
}

// The same with fmaxf instead of +.
__device__ float warp_max(float x) {
    // BEGIN SOLUTION
    for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
    // STUB
    // TODO(ex06): part 3 (optional). As warp_sum, combining with fmaxf.
    (void)x;
    not_implemented_yet();
    // END SOLUTION
}

// ---------------------------------------------------------------------------------------------
// Nothing to change below: how the grader runs your kernels on the emulator, launched exactly as
// lesson 06 launches its own (kernels::launch_on_emulator).

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
