#include "headwise/train/model.hpp"

#include "headwise/fast/blas.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/fused_backward.hpp"
#include "headwise/reference/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace headwise::train {

namespace {

constexpr float ln_eps = 1e-5f;  // nn.LayerNorm's default

// y (rows, out) = x (rows, in) . w^T, w stored (out, in).
void linear(const float* x, std::size_t rows, std::size_t in, const float* w, std::size_t out, float* y) {
    blas::gemm(false, true, rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
}

// The two gradients of y = x . w^T: dx (rows, in) = dy . w and dw (out, in) += dy^T . x.
void linear_backward(const float* x, std::size_t rows, std::size_t in, const float* w, std::size_t out, const float* dy,
                     float* dx, float* dw) {
    blas::gemm(false, false, rows, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in);
    blas::gemm(true, false, out, in, rows, 1.0f, dy, out, x, in, 1.0f, dw, in);
}

// y = (x - mean) * rstd * weight + bias over each row of d; keeps xhat and rstd for the backward.
void layer_norm(const float* x, std::size_t rows, std::size_t d, const float* weight, const float* bias, float* xhat,
                float* rstd, float* y) {
    for (std::size_t r = 0; r < rows; ++r) {
        const float* xr = x + r * d;
        float mean = 0.0f;
        for (std::size_t c = 0; c < d; ++c) mean += xr[c];
        mean /= float(d);
        float var = 0.0f;
        for (std::size_t c = 0; c < d; ++c) var += (xr[c] - mean) * (xr[c] - mean);
        const float s = 1.0f / std::sqrt(var / float(d) + ln_eps);
        rstd[r] = s;
        for (std::size_t c = 0; c < d; ++c) {
            xhat[r * d + c] = (xr[c] - mean) * s;
            y[r * d + c] = xhat[r * d + c] * weight[c] + bias[c];
        }
    }
}

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight; dweight += dy * xhat, dbias += dy.
void layer_norm_backward(const float* dy, const float* xhat, const float* rstd, std::size_t rows, std::size_t d,
                         const float* weight, float* dweight, float* dbias, float* dx) {
    for (std::size_t r = 0; r < rows; ++r) {
        const float* dyr = dy + r * d;
        const float* xr = xhat + r * d;
        float mean_g = 0.0f, mean_gx = 0.0f;
        for (std::size_t c = 0; c < d; ++c) {
            const float g = dyr[c] * weight[c];
            mean_g += g;
            mean_gx += g * xr[c];
            dweight[c] += dyr[c] * xr[c];
            dbias[c] += dyr[c];
        }
        mean_g /= float(d);
        mean_gx /= float(d);
        for (std::size_t c = 0; c < d; ++c) dx[r * d + c] += rstd[r] * (dyr[c] * weight[c] - mean_g - xr[c] * mean_gx);
    }
}

void resize(Tensor4& t, const std::array<std::size_t, 4>& shape) {
    if (t.dimension() != 4 || !std::equal(shape.begin(), shape.end(), t.shape().begin()))
        t = Tensor4::from_shape(shape);
}

// (B, N, 3d) rows of [q | k | v] -> three (B, H, N, d_head) tensors (part 0, 1, 2), or back (add into qkv).
void split_qkv(const float* qkv, std::size_t B, std::size_t N, std::size_t H, std::size_t dh, Tensor4* parts[3]) {
    const std::size_t d = H * dh;
    for (std::size_t p = 0; p < 3; ++p) {
        resize(*parts[p], {B, H, N, dh});
        float* out = parts[p]->data();
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t n = 0; n < N; ++n)
                    std::copy_n(qkv + (b * N + n) * 3 * d + p * d + h * dh, dh, out + ((b * H + h) * N + n) * dh);
    }
}

// z (B, N, d): head h's columns h dh .. (h + 1) dh - 1 replaced by 0, or by their mean over b at each n.
void ablate_head(float* z, std::size_t B, std::size_t N, std::size_t d, std::size_t dh, std::size_t h, Ablation with) {
    std::vector<double> mean(N * dh, 0.0);  // (N, d_head)
    if (with == Ablation::mean)
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t n = 0; n < N; ++n)
                for (std::size_t i = 0; i < dh; ++i) mean[n * dh + i] += double(z[(b * N + n) * d + h * dh + i]);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t i = 0; i < dh; ++i) z[(b * N + n) * d + h * dh + i] = float(mean[n * dh + i] / double(B));
}

bool ablates(const ForwardOptions& o, std::size_t layer) { return o.ablate_layer && *o.ablate_layer == layer; }

}  // namespace

std::size_t ParamInfo::count() const {
    std::size_t n = 1;
    for (std::size_t s : shape) n *= s;
    return n;
}

void check(const Config& c) {
    if (c.vocab < 2) throw usage_error(fmt::format("--vocab {}: the vocabulary needs at least 2 tokens", c.vocab));
    if (c.context < 8)
        throw usage_error(
            fmt::format("--context {}: a sequence needs at least 8 tokens (a segment of 4, twice)", c.context));
    if (c.d_model == 0 || c.heads == 0 || c.layers == 0)
        throw usage_error("--d-model, --heads and --layers must each be at least 1");
    if (c.d_model % c.heads != 0)
        throw usage_error(fmt::format("--heads {} does not divide --d-model {}", c.heads, c.d_model));
}

Layout make_layout(const Config& c) {
    Layout l;
    const std::size_t d = c.d_model;
    auto add = [&](std::string name, std::vector<std::size_t> shape) {
        ParamInfo info{std::move(name), std::move(shape), l.total};
        l.total += info.count();
        l.params.push_back(info);
        return info.offset;
    };
    l.embed = add("embed.weight", {c.vocab, d});
    l.pos_embed = add("pos_embed.weight", {c.context, d});
    for (std::size_t i = 0; i < c.layers; ++i) {
        const std::string p = fmt::format("layers.{}.", i);
        LayerOffsets o{};
        o.ln_weight = add(p + "ln.weight", {d});
        o.ln_bias = add(p + "ln.bias", {d});
        o.in_proj = add(p + "attn.in_proj_weight", {3 * d, d});
        o.out_proj = add(p + "attn.out_proj.weight", {d, d});
        l.layers.push_back(o);
    }
    l.ln_f_weight = add("ln_f.weight", {d});
    l.ln_f_bias = add("ln_f.bias", {d});
    l.unembed = add("unembed.weight", {c.vocab, d});
    return l;
}

Params init_params(const Config& c, Random& rng) {
    Params p(c);
    const std::size_t d = c.d_model;
    auto fill = [&](std::size_t offset, std::size_t count, auto draw) {
        for (std::size_t i = 0; i < count; ++i) p.values[offset + i] = draw();
    };
    const float linear_bound = 1.0f / std::sqrt(float(d));
    const float xavier_bound = std::sqrt(6.0f / float(d + 3 * d));
    fill(p.layout.embed, c.vocab * d, [&] { return rng.normal(); });
    fill(p.layout.pos_embed, c.context * d, [&] { return rng.normal(); });
    for (const LayerOffsets& o : p.layout.layers) {
        fill(o.ln_weight, d, [] { return 1.0f; });
        fill(o.in_proj, 3 * d * d, [&] { return rng.uniform(-xavier_bound, xavier_bound); });
        fill(o.out_proj, d * d, [&] { return rng.uniform(-linear_bound, linear_bound); });
    }
    fill(p.layout.ln_f_weight, d, [] { return 1.0f; });
    fill(p.layout.unembed, c.vocab * d, [&] { return rng.uniform(-linear_bound, linear_bound); });
    return p;
}

void forward(const Params& params, std::span<const std::int32_t> tokens, std::size_t B, std::size_t N,
             Activations& acts, const ForwardOptions& options) {
    const Config& c = params.config;
    const std::size_t d = c.d_model, H = c.heads, dh = c.d_head(), V = c.vocab, M = B * N;
    if (N > c.context || tokens.size() != M)
        throw usage_error(
            fmt::format("forward: {} tokens for (B {}, N {}) with context {}", tokens.size(), B, N, c.context));
    if (options.ablate_layer.has_value() != options.ablate_head.has_value() ||
        (options.ablate_layer && (*options.ablate_layer >= c.layers || *options.ablate_head >= H)))
        throw usage_error(fmt::format("forward: no head to ablate at layer {}, head {} ({} layers of {} heads)",
                                      options.ablate_layer.value_or(0), options.ablate_head.value_or(0), c.layers, H));
    acts.batch = B;
    acts.seq = N;
    acts.layers.resize(c.layers);
    std::vector<float>& x = acts.x_final;  // (B, N, d) the residual stream
    x.resize(M * d);
    for (std::size_t r = 0; r < M; ++r) {
        const std::int32_t t = tokens[r];
        if (t < 0 || std::size_t(t) >= V)
            throw usage_error(fmt::format("token {} is outside the vocabulary 0..{}", t, V - 1));
        const float* e = params.at(params.layout.embed) + std::size_t(t) * d;
        const float* p = params.at(params.layout.pos_embed) + (r % N) * d;
        for (std::size_t i = 0; i < d; ++i) x[r * d + i] = e[i] + p[i];
    }
    AttentionOptions causal;
    causal.causal = true;
    const float scale = 1.0f / std::sqrt(float(dh));
    std::vector<float>& qkv = acts.scratch.qkv;
    std::vector<float>& out = acts.scratch.out;
    qkv.resize(M * 3 * d);
    out.resize(M * d);
    for (std::size_t l = 0; l < c.layers; ++l) {
        const LayerOffsets& o = params.layout.layers[l];
        LayerCache& lc = acts.layers[l];
        lc.xhat.resize(M * d);
        lc.rstd.resize(M);
        lc.y.resize(M * d);
        layer_norm(x.data(), M, d, params.at(o.ln_weight), params.at(o.ln_bias), lc.xhat.data(), lc.rstd.data(),
                   lc.y.data());
        linear(lc.y.data(), M, d, params.at(o.in_proj), 3 * d, qkv.data());  // (B, N, 3d)
        Tensor4* parts[3] = {&lc.q, &lc.k, &lc.v};
        split_qkv(qkv.data(), B, N, H, dh, parts);  // each (B, H, N, d_head)
        // The heads' outputs straight into z (B, N, d), and each row's log-sum-exp for the backward.
        lc.z.resize(M * d);
        lc.lse.resize(B * H * N);
        fast::fused_attention({B, H, N, N, dh}, fast::contiguous_heads(std::as_const(lc.q).data(), H, N, dh),
                              fast::contiguous_heads(std::as_const(lc.k).data(), H, N, dh),
                              fast::contiguous_heads(std::as_const(lc.v).data(), H, N, dh),
                              fast::heads_in_rows(lc.z.data(), N, d, dh), scale, causal, {}, lc.lse.data());
        lc.weights.reset();
        if (options.keep_weights) {  // (B, H, N, N), for the lesson's figures
            Tensor4 weights;
            scaled_dot_product_attention(lc.q, lc.k, lc.v, causal, &weights);
            lc.weights = std::move(weights);
        }
        if (ablates(options, l)) ablate_head(lc.z.data(), B, N, d, dh, *options.ablate_head, options.ablate_with);
        linear(lc.z.data(), M, d, params.at(o.out_proj), d, out.data());
        for (std::size_t i = 0; i < M * d; ++i) x[i] += out[i];
    }
    acts.xhat_f.resize(M * d);
    acts.rstd_f.resize(M);
    acts.y_f.resize(M * d);
    layer_norm(x.data(), M, d, params.at(params.layout.ln_f_weight), params.at(params.layout.ln_f_bias),
               acts.xhat_f.data(), acts.rstd_f.data(), acts.y_f.data());
    acts.logits.resize(M * V);
    linear(acts.y_f.data(), M, d, params.at(params.layout.unembed), V, acts.logits.data());  // (B, N, V)
}

// Its own, not reference/layer_backward: no biases, pre-LN, every buffer allocated once a step, not per call.
void backward(const Params& params, std::span<const std::int32_t> tokens, Activations& acts,
              std::span<const float> dlogits, Params& grads) {
    const Config& c = params.config;
    const std::size_t d = c.d_model, H = c.heads, dh = c.d_head(), V = c.vocab;
    const std::size_t B = acts.batch, N = acts.seq, M = B * N;
    const Layout& L = params.layout;
    Activations::Scratch& s = acts.scratch;
    std::vector<float>& dy = s.dy;
    std::vector<float>& dx = s.dx;  // the residual stream's gradient
    dy.resize(M * d);
    dx.assign(M * d, 0.0f);
    linear_backward(acts.y_f.data(), M, d, params.at(L.unembed), V, dlogits.data(), dy.data(), grads.at(L.unembed));
    layer_norm_backward(dy.data(), acts.xhat_f.data(), acts.rstd_f.data(), M, d, params.at(L.ln_f_weight),
                        grads.at(L.ln_f_weight), grads.at(L.ln_f_bias), dx.data());
    AttentionOptions causal;
    causal.causal = true;
    const float scale = 1.0f / std::sqrt(float(dh));
    std::vector<float>& dz = s.dz;
    std::vector<float>& dqkv = s.dqkv;
    dz.resize(M * d);
    dqkv.resize(M * 3 * d);
    for (std::size_t l = c.layers; l-- > 0;) {
        const LayerOffsets& o = L.layers[l];
        LayerCache& lc = acts.layers[l];
        // x_out = x + z . W_o^T: the residual passes dx through unchanged; the branch gets it too.
        linear_backward(lc.z.data(), M, d, params.at(o.out_proj), d, dx.data(), dz.data(), grads.at(o.out_proj));
        // The attention's backward from dz, read where it lies, into dq | dk | dv (B, N, 3d) directly,
        // with P recomputed from the forward's log-sum-exp.
        fast::fused_attention_backward({B, H, N, N, dh}, fast::contiguous_heads(std::as_const(lc.q).data(), H, N, dh),
                                       fast::contiguous_heads(std::as_const(lc.k).data(), H, N, dh),
                                       fast::contiguous_heads(std::as_const(lc.v).data(), H, N, dh),
                                       fast::heads_in_rows(std::as_const(lc.z).data(), N, d, dh),
                                       fast::heads_in_rows(std::as_const(dz).data(), N, d, dh), lc.lse.data(),
                                       fast::heads_in_rows(dqkv.data(), N, 3 * d, dh),
                                       fast::heads_in_rows(dqkv.data() + d, N, 3 * d, dh),
                                       fast::heads_in_rows(dqkv.data() + 2 * d, N, 3 * d, dh), scale, causal);
        linear_backward(lc.y.data(), M, d, params.at(o.in_proj), 3 * d, dqkv.data(), dy.data(), grads.at(o.in_proj));
        layer_norm_backward(dy.data(), lc.xhat.data(), lc.rstd.data(), M, d, params.at(o.ln_weight),
                            grads.at(o.ln_weight), grads.at(o.ln_bias), dx.data());
    }
    for (std::size_t r = 0; r < M; ++r) {
        float* de = grads.at(L.embed) + std::size_t(tokens[r]) * d;
        float* dp = grads.at(L.pos_embed) + (r % N) * d;
        for (std::size_t i = 0; i < d; ++i) {
            de[i] += dx[r * d + i];
            dp[i] += dx[r * d + i];
        }
    }
}

std::vector<std::int32_t> next_token_targets(const Batch& batch) {
    std::vector<std::int32_t> targets(batch.tokens.size(), -1);
    for (std::size_t b = 0; b < batch.batch; ++b)
        for (std::size_t n = 0; n + 1 < batch.seq; ++n) targets[b * batch.seq + n] = batch.token(b, n + 1);
    return targets;
}

}  // namespace headwise::train
