// Exercise 07 -- one encoder layer of a real trained model.
//
// Read lesson 07 first (./headwise run 7, lessons/07_real_model.cpp, docs/07_real_model.md):
// step 4 computes exactly this layer, one shape at a time.
// Grade with:  ./headwise grade 7    (or: ctest --preset grade -L ex07)
// Stuck? ./headwise hint 7 shows one hint at a time (exercises/07_real_model/HINTS.md).
//
// Tensor3::from_shape({B, N, d}) makes a tensor, t(b, i, c) reads or writes an entry,
// t.shape()[k] is a size. std::erf and std::sqrt are in <cmath>.
#include "encoder_layer.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace headwise::ex07 {

namespace {

// BEGIN SOLUTION
// y (B, N, out) = x (B, N, in) . w^T + b, with w (out, in).
Tensor3 linear(const Tensor3& x, const Tensor2& w, const Tensor1& b) {
    const std::size_t B = x.shape()[0], N = x.shape()[1], in = x.shape()[2], out = w.shape()[0];
    Tensor3 y = Tensor3::from_shape({B, N, out});
    for (std::size_t s = 0; s < B; ++s)
        for (std::size_t i = 0; i < N; ++i)
            for (std::size_t o = 0; o < out; ++o) {
                float acc = b(o);
                for (std::size_t c = 0; c < in; ++c) acc += x(s, i, c) * w(o, c);
                y(s, i, o) = acc;
            }
    return y;
}

// Over the last axis: (v - mean) / sqrt(biased variance + eps) * gamma + beta.
Tensor3 layer_norm(const Tensor3& x, const Tensor1& gamma, const Tensor1& beta, float eps) {
    const std::size_t B = x.shape()[0], N = x.shape()[1], d = x.shape()[2];
    Tensor3 y = Tensor3::from_shape({B, N, d});
    for (std::size_t s = 0; s < B; ++s)
        for (std::size_t i = 0; i < N; ++i) {
            double mean = 0.0, var = 0.0;
            for (std::size_t c = 0; c < d; ++c) mean += x(s, i, c);
            mean /= static_cast<double>(d);
            for (std::size_t c = 0; c < d; ++c) var += (x(s, i, c) - mean) * (x(s, i, c) - mean);
            var /= static_cast<double>(d);  // biased: divide by d, not d - 1
            const double inv = 1.0 / std::sqrt(var + eps);
            for (std::size_t c = 0; c < d; ++c)
                y(s, i, c) = static_cast<float>((x(s, i, c) - mean) * inv) * gamma(c) + beta(c);
        }
    return y;
}

// Multi-head self-attention with a key padding mask; fills weights (B, H, N, N).
Tensor3 self_attention(const LayerWeights& w, const Tensor3& x, const Mask2& padding, Tensor4& weights) {
    const std::size_t B = x.shape()[0], N = x.shape()[1], d = x.shape()[2], H = w.heads, dh = d / H;
    const Tensor3 q = linear(x, w.w_q, w.b_q);  // (B, N, d_model)
    const Tensor3 k = linear(x, w.w_k, w.b_k);  // (B, N, d_model)
    const Tensor3 v = linear(x, w.w_v, w.b_v);  // (B, N, d_model)
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    weights = Tensor4::from_shape({B, H, N, N});
    Tensor3 concat = Tensor3::from_shape({B, N, d});  // head h writes columns h*d_head ..
    std::vector<float> row(N);
    for (std::size_t s = 0; s < B; ++s)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < N; ++i) {
                float m = -std::numeric_limits<float>::infinity();
                for (std::size_t j = 0; j < N; ++j) {
                    float dot = 0.0f;
                    for (std::size_t c = h * dh; c < (h + 1) * dh; ++c) dot += q(s, i, c) * k(s, j, c);
                    row[j] = padding(s, j) ? -std::numeric_limits<float>::infinity() : dot * scale;  // mask the KEY j
                    m = std::max(m, row[j]);
                }
                float sum = 0.0f;
                for (std::size_t j = 0; j < N; ++j) sum += row[j] = std::exp(row[j] - m);
                for (std::size_t j = 0; j < N; ++j) weights(s, h, i, j) = row[j] / sum;
                for (std::size_t c = h * dh; c < (h + 1) * dh; ++c) {
                    float acc = 0.0f;
                    for (std::size_t j = 0; j < N; ++j) acc += weights(s, h, i, j) * v(s, j, c);
                    concat(s, i, c) = acc;
                }
            }
    return linear(concat, w.w_o, w.b_o);  // (B, N, d_model)
}
// STUB
// Helpers you may want (lesson 07, step 4): linear (y = x . w^T + b), layer_norm, self-attention
// with the key padding mask. Write them here.
// END SOLUTION

}  // namespace

Tensor3 encoder_layer(const LayerWeights& w, const Tensor3& x, const Mask2& key_padding_mask, Tensor4& weights) {
    // BEGIN SOLUTION
    const Tensor3 a = self_attention(w, x, key_padding_mask, weights);          // (B, N, d_model)
    const Tensor3 h = layer_norm(x + a, w.ln1_gamma, w.ln1_beta, w.eps);        // residual, then LayerNorm (post-LN)
    Tensor3 up = linear(h, w.w_1, w.b_1);                                       // (B, N, d_ffn)
    for (float& z : up) z = 0.5f * z * (1.0f + std::erf(z / std::sqrt(2.0f)));  // exact GELU
    const Tensor3 f = linear(up, w.w_2, w.b_2);                                 // (B, N, d_model)
    return layer_norm(h + f, w.ln2_gamma, w.ln2_beta, w.eps);
    // STUB
    // TODO(ex07): attention (q, k, v = x . W^T + b, per head softmax(q k^T / sqrt(d_head)) with
    // padded KEYS at -inf, fill `weights`, then W_O), h = LayerNorm(x + attention), then
    // y = LayerNorm(h + GELU(h . w_1^T + b_1) . w_2^T + b_2). Lesson 07, step 4, in that order.
    not_implemented_yet();
    // END SOLUTION
}

double previous_token_score(const Tensor2& weights, std::size_t n) {
    // BEGIN SOLUTION
    if (n < 2) return 0.0;
    double sum = 0.0;
    for (std::size_t i = 1; i < n; ++i) sum += weights(i, i - 1);
    return sum / static_cast<double>(n - 1);
    // STUB
    // TODO(ex07): the mean of weights(i, i - 1) over i = 1 .. n-1 (lesson 07, step 6).
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex07
