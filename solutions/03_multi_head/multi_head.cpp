// Exercise 03 -- multi-head attention: match torch.nn.MultiheadAttention.
//
// Read lesson 03 first (./headwise run 3, lessons/03_multi_head.cpp, docs/03_multi_head.md).
// Grade with:  ./headwise grade 3    (or: ctest --preset grade -L ex03)
// Stuck? ./headwise hint 3 shows one hint at a time (exercises/03_multi_head/HINTS.md).
//
// You may use the library's pieces from lessons 01 and 02: headwise::linear (y = x . W^T + b),
// headwise::split_heads, headwise::merge_heads (attention.hpp) and headwise::softmax (softmax.hpp).
// Write the per-head attention yourself: scaled_dot_product_attention and MultiHeadAttention::forward
// are the answer, not a step towards it. xt::view(w, xt::range(a, b), xt::all()) is rows a..b-1 of w.
#include "multi_head.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/reference/softmax.hpp"

#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex03 {

Tensor3 multi_head_attention(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                             Tensor4& weights) {
    // BEGIN SOLUTION
    const std::size_t d_model = p.out_proj_weight.shape()[0];
    const std::size_t d_head = d_model / p.heads;

    // Block 0, 1, 2 of in_proj_weight's rows (and of in_proj_bias) is W_q, W_k, W_v.
    auto project = [&](const Tensor3& x, std::size_t block) {
        const std::size_t first = block * d_model, last = first + d_model;
        const Tensor2 w = xt::view(p.in_proj_weight, xt::range(first, last), xt::all());  // (d_model, d_model)
        const Tensor1 b =
            p.in_proj_bias.size() == 0 ? Tensor1() : Tensor1(xt::view(p.in_proj_bias, xt::range(first, last)));
        return split_heads(linear(x, w, b), p.heads);  // (B, N, d_model) -> (B, H, N, d_head)
    };
    const Tensor4 q = project(query, 0);  // (B, H, N_q, d_head)
    const Tensor4 k = project(key, 1);    // (B, H, N_k, d_head)
    const Tensor4 v = project(value, 2);  // (B, H, N_k, d_head)

    const std::size_t batch = q.shape()[0], n_q = q.shape()[2], n_k = k.shape()[2];
    const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));  // each head is d_head wide

    // scores (B, H, N_q, N_k) = q . k^T / sqrt(d_head), for every (batch, head)
    Tensor4 scores = Tensor4::from_shape({batch, p.heads, n_q, n_k});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < p.heads; ++h)
            for (std::size_t i = 0; i < n_q; ++i)
                for (std::size_t j = 0; j < n_k; ++j) {
                    float dot = 0.0f;
                    for (std::size_t c = 0; c < d_head; ++c) dot += q(b, h, i, c) * k(b, h, j, c);
                    scores(b, h, i, j) = dot * scale;
                }
    weights = softmax(scores);  // (B, H, N_q, N_k)

    // per-head outputs (B, H, N_q, d_head) = weights . v
    Tensor4 heads_out = Tensor4::from_shape({batch, p.heads, n_q, d_head});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < p.heads; ++h)
            for (std::size_t i = 0; i < n_q; ++i)
                for (std::size_t c = 0; c < d_head; ++c) {
                    float acc = 0.0f;
                    for (std::size_t j = 0; j < n_k; ++j) acc += weights(b, h, i, j) * v(b, h, j, c);
                    heads_out(b, h, i, c) = acc;
                }

    // concatenate the heads (B, N_q, d_model) and let W_o mix them
    return linear(merge_heads(heads_out), p.out_proj_weight, p.out_proj_bias);
    // STUB
    // TODO(ex03): nn.MultiheadAttention's forward pass (lesson 03, step 2): return the output
    // (B, N_q, d_model) and store the per-head weights (B, H, N_q, N_k) in `weights`. Parameters
    // in PyTorch's layout: in_proj_weight stacks W_q, W_k, W_v (rows 0..d-1, d..2d-1, 2d..3d-1),
    // in_proj_bias likewise (empty: no biases); out_proj_weight and out_proj_bias are W_o and its bias.
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex03
