// headwise/fused_attention.hpp -- the fast path behind scaled_dot_product_attention and
// MultiHeadAttention::forward when nobody asked for the (B, H, N_q, N_k) weights.
//
// Instead of materialising every head's N_q x N_k weights, it works on a tile of queries at a
// time: scores for the tile (one BLAS call), masked and softmaxed in place while they are still in
// cache, then multiplied by V (a second BLAS call) straight into the output, wherever the output
// lives (e.g. already merged as (B, N, d_model)). Causal tiles stop at the diagonal, so the
// masked half is never computed. Tiles are shared between the machine's cores.
#pragma once

#include "headwise/attention.hpp"

namespace headwise::detail {

// A (B, H, N, d_head) tensor anywhere in memory: element (b, h, n, c) is
// data[b * batch + h * head + n * row + c] (the d_head entries of a row are contiguous).
template <class T>
struct Strided {
    T* data;
    std::size_t batch, head, row;
};

struct AttentionShape {
    std::size_t batch, heads, nq, nk, d_head;
};

void fused_attention(const AttentionShape& shape, Strided<const float> q, Strided<const float> k,
                     Strided<const float> v, Strided<float> out, float scale, const AttentionOptions& options);

}  // namespace headwise::detail
