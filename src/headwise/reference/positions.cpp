// headwise/reference/positions.cpp -- sinusoids, RoPE in both layouts, ALiBi, attention with a bias.
#include "headwise/reference/positions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace headwise {

Tensor2 sinusoidal_table(std::size_t n, std::size_t d_model, double base, std::size_t first_position) {
    if (d_model == 0 || d_model % 2 != 0) {
        throw usage_error(fmt::format("sinusoidal encodings need an even d_model (sin, cos pairs), got {}", d_model));
    }
    if (!(base > 1.0)) throw usage_error(fmt::format("sinusoidal encodings: base must be > 1, got {}", base));
    Tensor2 pe = Tensor2::from_shape({n, d_model});  // (N, d_model)
    for (std::size_t i = 0; i < d_model / 2; ++i) {
        const double w = std::pow(base, -2.0 * double(i) / double(d_model));
        for (std::size_t p = 0; p < n; ++p) {
            const double angle = double(first_position + p) * w;
            pe(p, 2 * i) = static_cast<float>(std::sin(angle));
            pe(p, 2 * i + 1) = static_cast<float>(std::cos(angle));
        }
    }
    return pe;
}

std::string_view layout_name(RopeLayout layout) { return layout == RopeLayout::half ? "half" : "interleaved"; }

void validate(const Rope& rope, std::size_t d_head) {
    if (d_head == 0 || d_head % 2 != 0) {
        throw usage_error(fmt::format("RoPE rotates pairs of dimensions: d_head must be even, got {}", d_head));
    }
    if (!(rope.base > 1.0) || !std::isfinite(rope.base)) {
        throw usage_error(fmt::format("RoPE base must be a finite number > 1 (10000 in Llama 2), got {}", rope.base));
    }
    if (!(rope.position_scale > 0.0) || !std::isfinite(rope.position_scale)) {
        throw usage_error(fmt::format("RoPE position scale must be > 0, got {}", rope.position_scale));
    }
}

std::vector<double> rope_frequencies(std::size_t d_head, double base) {
    validate(Rope{base}, d_head);
    std::vector<double> theta(d_head / 2);
    for (std::size_t i = 0; i < theta.size(); ++i) theta[i] = std::pow(base, -2.0 * double(i) / double(d_head));
    return theta;
}

std::pair<std::size_t, std::size_t> rope_pair(std::size_t i, std::size_t d_head, RopeLayout layout) {
    return layout == RopeLayout::interleaved ? std::pair{2 * i, 2 * i + 1} : std::pair{i, i + d_head / 2};
}

Tensor4 apply_rope(const Tensor4& x, const Rope& rope, std::span<const double> positions) {
    const std::size_t batch = x.shape()[0], heads = x.shape()[1], n = x.shape()[2], d_head = x.shape()[3];
    validate(rope, d_head);
    if (positions.size() != n) {
        throw usage_error(fmt::format("apply_rope: {} positions for {} tokens", positions.size(), n));
    }
    Tensor4 y = x;  // (B, H, N, d_head)
    rotate_in_place({y.data(), heads * n * d_head, n * d_head, d_head}, {batch, heads, n, d_head}, rope, positions);
    return y;
}

void rotate_in_place(fast::Strided<float> x, const RopeShape& shape, const Rope& rope,
                     std::span<const double> positions, bool inverse) {
    rotate_in_place(x, shape, rope.layout, rope_angles(rope, shape.d_head, positions, inverse));
}

RopeAngles rope_angles(const Rope& rope, std::size_t d_head, std::span<const double> positions, bool inverse) {
    const std::vector<double> theta = rope_frequencies(d_head, rope.base);
    const double sign = inverse ? -1.0 : 1.0;
    RopeAngles a{theta.size(), std::vector<double>(positions.size() * theta.size()),
                 std::vector<double>(positions.size() * theta.size())};
    for (std::size_t t = 0; t < positions.size(); ++t)
        for (std::size_t i = 0; i < theta.size(); ++i) {
            const double angle = positions[t] * rope.position_scale * theta[i];
            a.cos[t * theta.size() + i] = std::cos(angle);
            a.sin[t * theta.size() + i] = sign * std::sin(angle);
        }
    return a;
}

void rotate_in_place(fast::Strided<float> x, const RopeShape& shape, RopeLayout layout, const RopeAngles& angles) {
    if (angles.pairs * 2 != shape.d_head || angles.cos.size() < shape.n * angles.pairs)
        throw std::invalid_argument(
            fmt::format("RoPE angles for {} pairs of {} tokens, asked to rotate {} tokens of d_head {}", angles.pairs,
                        angles.cos.size() / std::max<std::size_t>(1, angles.pairs), shape.n, shape.d_head));
    for (std::size_t b = 0; b < shape.batch; ++b)
        for (std::size_t h = 0; h < shape.heads; ++h)
            for (std::size_t t = 0; t < shape.n; ++t) {
                float* row = x.data + b * x.batch + h * x.head + t * x.row;
                for (std::size_t i = 0; i < angles.pairs; ++i) {
                    const auto [a, z] = rope_pair(i, shape.d_head, layout);
                    const double xa = row[a], xz = row[z];
                    const double ci = angles.cos[t * angles.pairs + i], si = angles.sin[t * angles.pairs + i];
                    row[a] = static_cast<float>(xa * ci - xz * si);
                    row[z] = static_cast<float>(xz * ci + xa * si);
                }
            }
}

Tensor4 apply_rope(const Tensor4& x, const Rope& rope, std::size_t first_position) {
    std::vector<double> positions(x.shape()[2]);
    for (std::size_t t = 0; t < positions.size(); ++t) positions[t] = double(first_position + t);
    return apply_rope(x, rope, positions);
}

std::vector<std::size_t> half_to_interleaved(std::size_t d_head) {
    if (d_head % 2 != 0) throw usage_error(fmt::format("d_head must be even, got {}", d_head));
    std::vector<std::size_t> perm(d_head);
    for (std::size_t i = 0; i < d_head / 2; ++i) {
        perm[2 * i] = i;
        perm[2 * i + 1] = i + d_head / 2;
    }
    return perm;
}

Tensor4 permute_dims(const Tensor4& x, std::span<const std::size_t> perm) {
    const std::size_t d = x.shape()[3];
    if (perm.size() != d) throw usage_error(fmt::format("permute_dims: {} indices for d_head = {}", perm.size(), d));
    Tensor4 y = Tensor4::from_shape(x.shape());
    const std::size_t rows = x.size() / std::max<std::size_t>(d, 1);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < d; ++c) y.data()[r * d + c] = x.data()[r * d + perm[c]];
    return y;
}

// ---------------------------------------------------------------------------------------------

namespace {
// 2^(-8 h / n), h = 1 .. n: the slopes for n a power of two.
std::vector<double> power_of_two_slopes(std::size_t n) {
    std::vector<double> s(n);
    for (std::size_t h = 0; h < n; ++h) s[h] = std::exp2(-8.0 * double(h + 1) / double(n));
    return s;
}
}  // namespace

std::vector<double> alibi_slopes(std::size_t heads) {
    if (heads == 0) throw usage_error("ALiBi needs at least one head");
    std::size_t p = 1;
    while (2 * p <= heads) p *= 2;  // the largest power of two <= H
    std::vector<double> slopes = power_of_two_slopes(p);
    const std::vector<double> finer = power_of_two_slopes(2 * p);
    for (std::size_t i = 0; slopes.size() < heads; i += 2) slopes.push_back(finer[i]);
    return slopes;
}

Tensor3 alibi_bias(std::size_t heads, std::size_t n_q, std::size_t n_k, std::size_t first_query) {
    const std::vector<double> slopes = alibi_slopes(heads);
    Tensor3 bias = Tensor3::from_shape({heads, n_q, n_k});  // (H, N_q, N_k)
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < n_q; ++i)
            for (std::size_t j = 0; j < n_k; ++j) {
                const double distance = std::abs(double(first_query + i) - double(j));
                bias(h, i, j) = static_cast<float>(-slopes[h] * distance);
            }
    return bias;
}

// ---------------------------------------------------------------------------------------------

Tensor4 attention_with_bias(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Tensor3* bias,
                            const AttentionOptions& options, Tensor4* weights) {
    const auto &sq = q.shape(), &sk = k.shape();
    const std::size_t batch = sq[0], heads = sq[1], nq = sq[2], d_head = sq[3], kv_heads = sk[1], nk = sk[2];
    if (sk[0] != batch || sk[3] != d_head || v.shape() != k.shape() || kv_heads == 0 || heads % kv_heads != 0) {
        throw usage_error(
            fmt::format("attention: q (B, H, N_q, d_head) = ({}, {}, {}, {}) does not fit k ({}, {}, {}, {}) and v "
                        "({}, {}, {}, {})",
                        batch, heads, nq, d_head, sk[0], sk[1], sk[2], sk[3], v.shape()[0], v.shape()[1], v.shape()[2],
                        v.shape()[3]));
    }
    if (bias != nullptr && (bias->shape()[0] != heads || bias->shape()[1] != nq || bias->shape()[2] != nk)) {
        throw usage_error(fmt::format("attention: the bias must be (H, N_q, N_k) = ({}, {}, {}), got ({}, {}, {})",
                                      heads, nq, nk, bias->shape()[0], bias->shape()[1], bias->shape()[2]));
    }
    const std::size_t group = heads / kv_heads;
    const double scale = options.scale.value_or(1.0f / std::sqrt(static_cast<float>(d_head)));
    Tensor4 out = Tensor4::from_shape({batch, heads, nq, d_head});
    if (weights != nullptr) *weights = Tensor4::from_shape({batch, heads, nq, nk});
    std::vector<double> s(nk);
    std::vector<bool> seen(nk);
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads; ++h) {
            const std::size_t kv = h / group;
            for (std::size_t i = 0; i < nq; ++i) {
                double m = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < nk; ++j) {
                    seen[j] = !(options.causal && j > i) &&
                              !(options.attn_mask != nullptr && (*options.attn_mask)(i, j)) &&
                              !(options.key_padding_mask != nullptr && (*options.key_padding_mask)(b, j));
                    if (!seen[j]) continue;
                    double dot = 0.0;
                    for (std::size_t c = 0; c < d_head; ++c) dot += double(q(b, h, i, c)) * double(k(b, kv, j, c));
                    s[j] = dot * scale + (bias != nullptr ? double((*bias)(h, i, j)) : 0.0);
                    m = std::max(m, s[j]);
                }
                double sum = 0.0;
                for (std::size_t j = 0; j < nk; ++j) {
                    s[j] = seen[j] ? std::exp(s[j] - m) : 0.0;
                    sum += s[j];
                }
                for (std::size_t j = 0; j < nk; ++j) {
                    s[j] = sum > 0.0 ? s[j] / sum : 0.0;
                    if (weights != nullptr) (*weights)(b, h, i, j) = static_cast<float>(s[j]);
                }
                for (std::size_t c = 0; c < d_head; ++c) {
                    double acc = 0.0;
                    for (std::size_t j = 0; j < nk; ++j) acc += s[j] * double(v(b, kv, j, c));
                    out(b, h, i, c) = static_cast<float>(acc);
                }
            }
        }
    return out;
}

}  // namespace headwise
