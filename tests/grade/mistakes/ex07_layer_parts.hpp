// The parts the exercise 07 mistakes share: the encoder layer built from the library's pieces,
// with a switch for each catalogued mistake (each ex07_*.cpp turns exactly one on). Not a
// mistake file itself (the catalogue collects ex07_*.cpp only).
#pragma once

#include "encoder_layer.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/model/bert.hpp"
#include "headwise/model/head_roles.hpp"

#include <xtensor/xview.hpp>

#include <cmath>

namespace headwise::ex07::parts {

struct Wrong {
    bool pre_ln = false;          // LayerNorm before each block instead of after each residual sum
    bool tanh_gelu = false;       // the tanh approximation of GELU
    bool unbiased = false;        // LayerNorm divides the squared deviations by d - 1
    bool mask_queries = false;    // padded queries masked instead of padded keys
    bool ignore_padding = false;  // no mask at all
    bool x_times_w = false;       // q = x . W_q instead of x . W_q^T (likewise k, v, o)
    bool no_residual = false;     // h = LayerNorm(attention), the x + forgotten
};

inline Tensor3 norm(const Tensor3& x, const Tensor1& gamma, const Tensor1& beta, float eps, const Wrong& wrong) {
    if (!wrong.unbiased) return bert::layer_norm(x, gamma, beta, eps);
    const std::size_t d = x.shape()[2];
    Tensor3 y = x;
    for (std::size_t b = 0; b < x.shape()[0]; ++b)
        for (std::size_t i = 0; i < x.shape()[1]; ++i) {
            double mean = 0.0, ss = 0.0;
            for (std::size_t c = 0; c < d; ++c) mean += x(b, i, c);
            mean /= static_cast<double>(d);
            for (std::size_t c = 0; c < d; ++c) ss += (x(b, i, c) - mean) * (x(b, i, c) - mean);
            const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d - 1) + eps);  // d - 1: wrong
            for (std::size_t c = 0; c < d; ++c)
                y(b, i, c) = static_cast<float>((x(b, i, c) - mean) * inv) * gamma(c) + beta(c);
        }
    return y;
}

inline Tensor3 attention(const LayerWeights& w, const Tensor3& x, const Mask2& padding, Tensor4& weights,
                         const Wrong& wrong) {
    auto proj = [&](const Tensor2& m, const Tensor1& b) {
        return wrong.x_times_w ? linear(x, Tensor2(xt::transpose(m)), b) : linear(x, m, b);
    };
    const Tensor4 q = split_heads(proj(w.w_q, w.b_q), w.heads);  // (B, H, N, d_head)
    const Tensor4 k = split_heads(proj(w.w_k, w.b_k), w.heads);
    const Tensor4 v = split_heads(proj(w.w_v, w.b_v), w.heads);
    const std::size_t B = x.shape()[0], N = x.shape()[1];
    Tensor4 heads_out;
    if (wrong.mask_queries) {  // batch element by batch element: row i hidden when token i is padding
        heads_out = Tensor4::from_shape(q.shape());
        weights = Tensor4::from_shape({B, w.heads, N, N});
        for (std::size_t b = 0; b < B; ++b) {
            Mask2 rows = Mask2::from_shape({N, N});
            for (std::size_t i = 0; i < N; ++i)
                for (std::size_t j = 0; j < N; ++j) rows(i, j) = padding(b, i);
            AttentionOptions o;
            o.attn_mask = &rows;
            Tensor4 wb;
            const Tensor4 qb = xt::view(q, xt::range(b, b + 1)), kb = xt::view(k, xt::range(b, b + 1)),
                          vb = xt::view(v, xt::range(b, b + 1));
            xt::view(heads_out, xt::range(b, b + 1)) = scaled_dot_product_attention(qb, kb, vb, o, &wb);
            xt::view(weights, xt::range(b, b + 1)) = wb;
        }
    } else {
        AttentionOptions o;
        if (!wrong.ignore_padding) o.key_padding_mask = &padding;
        heads_out = scaled_dot_product_attention(q, k, v, o, &weights);
    }
    const Tensor3 concat = merge_heads(heads_out);
    return wrong.x_times_w ? linear(concat, Tensor2(xt::transpose(w.w_o)), w.b_o) : linear(concat, w.w_o, w.b_o);
}

inline Tensor3 ffn(const LayerWeights& w, const Tensor3& h, const Wrong& wrong) {
    Tensor3 up = linear(h, w.w_1, w.b_1);
    for (float& z : up) {
        z = wrong.tanh_gelu ? 0.5f * z * (1.0f + std::tanh(0.7978845608f * (z + 0.044715f * z * z * z)))
                            : 0.5f * z * (1.0f + std::erf(z / std::sqrt(2.0f)));
    }
    return linear(up, w.w_2, w.b_2);
}

inline Tensor3 layer(const LayerWeights& w, const Tensor3& x, const Mask2& padding, Tensor4& weights,
                     const Wrong& wrong) {
    if (wrong.pre_ln) {
        const Tensor3 h = x + attention(w, norm(x, w.ln1_gamma, w.ln1_beta, w.eps, wrong), padding, weights, wrong);
        return h + ffn(w, norm(h, w.ln2_gamma, w.ln2_beta, w.eps, wrong), wrong);
    }
    const Tensor3 a = attention(w, x, padding, weights, wrong);
    const Tensor3 h = wrong.no_residual ? norm(a, w.ln1_gamma, w.ln1_beta, w.eps, wrong)
                                        : norm(x + a, w.ln1_gamma, w.ln1_beta, w.eps, wrong);
    return norm(h + ffn(w, h, wrong), w.ln2_gamma, w.ln2_beta, w.eps, wrong);
}

}  // namespace headwise::ex07::parts
