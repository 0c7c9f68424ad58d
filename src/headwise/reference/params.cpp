#include "headwise/reference/params.hpp"

#include "headwise/base/cli.hpp"

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <array>

namespace headwise::params {

namespace {

template <class T>
ParameterTensor describe(std::string name, const T& t) {
    return {std::move(name), std::vector<std::size_t>(t.shape().begin(), t.shape().end()), t.size()};
}

std::size_t checked_head_dim(std::size_t d_model, std::size_t heads) {
    cli::require_divisible(d_model, heads);
    return d_model / heads;
}

// Rows [h * d_head, (h + 1) * d_head) of the block `which` (0 = q, 1 = k, 2 = v) of in_proj_weight.
Tensor2 weight_rows(const MultiHeadAttention& m, std::size_t which, std::size_t h, std::size_t d_head) {
    const std::size_t first = which * m.d_model() + h * d_head;
    return xt::view(m.in_proj_weight, xt::range(first, first + d_head), xt::all());
}

Tensor1 bias_rows(const MultiHeadAttention& m, std::size_t which, std::size_t h, std::size_t d_head) {
    const std::size_t first = which * m.d_model() + h * d_head;
    return xt::view(m.in_proj_bias, xt::range(first, first + d_head));
}

}  // namespace

std::vector<ParameterTensor> parameters_of(const MultiHeadAttention& m) {
    std::vector<ParameterTensor> out;
    out.push_back(describe("in_proj_weight", m.in_proj_weight));
    if (m.in_proj_bias.size() != 0) out.push_back(describe("in_proj_bias", m.in_proj_bias));
    out.push_back(describe("out_proj_weight", m.out_proj_weight));
    if (m.out_proj_bias.size() != 0) out.push_back(describe("out_proj_bias", m.out_proj_bias));
    return out;
}

PerHeadAttention split_per_head(const MultiHeadAttention& m) {
    m.validate();
    const std::size_t d_head = m.d_model() / m.heads;
    const bool bias = m.in_proj_bias.size() != 0;
    PerHeadAttention p;
    for (std::size_t h = 0; h < m.heads; ++h) {
        p.w_q.push_back(weight_rows(m, 0, h, d_head));
        p.w_k.push_back(weight_rows(m, 1, h, d_head));
        p.w_v.push_back(weight_rows(m, 2, h, d_head));
        if (bias) {
            p.b_q.push_back(bias_rows(m, 0, h, d_head));
            p.b_k.push_back(bias_rows(m, 1, h, d_head));
            p.b_v.push_back(bias_rows(m, 2, h, d_head));
        }
    }
    p.w_o = m.out_proj_weight;
    p.b_o = m.out_proj_bias;
    return p;
}

std::vector<ParameterTensor> parameters_of(const PerHeadAttention& m) {
    std::vector<ParameterTensor> out;
    const std::size_t heads = m.w_q.size();
    for (std::size_t h = 0; h < heads; ++h) {
        out.push_back(describe(fmt::format("w_q[{}]", h), m.w_q[h]));
        out.push_back(describe(fmt::format("w_k[{}]", h), m.w_k[h]));
        out.push_back(describe(fmt::format("w_v[{}]", h), m.w_v[h]));
    }
    for (std::size_t h = 0; h < m.b_q.size(); ++h) {
        out.push_back(describe(fmt::format("b_q[{}]", h), m.b_q[h]));
        out.push_back(describe(fmt::format("b_k[{}]", h), m.b_k[h]));
        out.push_back(describe(fmt::format("b_v[{}]", h), m.b_v[h]));
    }
    out.push_back(describe("w_o", m.w_o));
    if (m.b_o.size() != 0) out.push_back(describe("b_o", m.b_o));
    return out;
}

std::vector<ParameterTensor> per_head_layout(std::size_t d_model, std::size_t heads, bool bias) {
    const std::size_t d_head = checked_head_dim(d_model, heads);
    auto entry = [](std::string name, std::vector<std::size_t> shape) {
        std::size_t count = 1;
        for (std::size_t s : shape) count *= s;
        return ParameterTensor{std::move(name), std::move(shape), count};
    };
    std::vector<ParameterTensor> out;
    for (std::size_t h = 0; h < heads; ++h)
        for (const char* w : {"w_q", "w_k", "w_v"})
            out.push_back(entry(fmt::format("{}[{}]", w, h), {d_head, d_model}));
    if (bias)
        for (std::size_t h = 0; h < heads; ++h)
            for (const char* b : {"b_q", "b_k", "b_v"}) out.push_back(entry(fmt::format("{}[{}]", b, h), {d_head}));
    out.push_back(entry("w_o", {d_model, d_model}));
    if (bias) out.push_back(entry("b_o", {d_model}));
    return out;
}

std::size_t total(std::span<const ParameterTensor> tensors) {
    std::size_t sum = 0;
    for (const auto& t : tensors) sum += t.count;
    return sum;
}

std::size_t attention_params(std::size_t d_model, bool bias) {
    const std::size_t weights = cli::checked_product({4, d_model, d_model}, "attention parameters");
    return weights + (bias ? 4 * d_model : 0);
}

std::size_t per_head_params(std::size_t d_model, std::size_t heads, bool bias) {
    const std::size_t d_head = checked_head_dim(d_model, heads);
    const std::size_t qkv = cli::checked_product({heads, 3, d_model, d_head}, "per-head parameters");
    const std::size_t out = cli::checked_product({d_model, d_model}, "per-head parameters");
    return qkv + out + (bias ? heads * 3 * d_head + d_model : 0);
}

double flops_per_token(std::size_t d_model, std::size_t context) {
    const double d = static_cast<double>(d_model);
    return 8.0 * d * d + 4.0 * static_cast<double>(context) * d;
}

std::uint64_t attention_matrix_bytes(std::size_t batch, std::size_t heads, std::size_t context,
                                     std::size_t bytes_per_element) {
    return cli::checked_product({batch, heads, context, context, bytes_per_element}, "attention matrix");
}

std::span<const ModelConfig> known_models() {
    static constexpr std::array<ModelConfig, 8> models{{
        {"Transformer base", 512, 8, 18, "6 encoder self + 6 decoder self + 6 cross"},
        {"BERT-base", 768, 12, 12, "12 layers"},
        {"BERT-large", 1024, 16, 24, "24 layers"},
        {"GPT-2 small", 768, 12, 12, "12 layers"},
        {"GPT-2 medium", 1024, 16, 24, "24 layers"},
        {"GPT-2 large", 1280, 20, 36, "36 layers"},
        {"GPT-2 XL", 1600, 25, 48, "48 layers"},
        {"GPT-3 175B", 12288, 96, 96, "96 layers"},
    }};
    return models;
}

std::vector<std::size_t> valid_head_counts(std::size_t d_model) {
    std::vector<std::size_t> out;
    for (std::size_t h = 1; h <= d_model; ++h)
        if (d_model % h == 0) out.push_back(h);
    return out;
}

std::string group_digits(std::uint64_t n) {
    const std::string digits = std::to_string(n);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string format_bytes(double bytes) {
    static constexpr std::array<const char*, 6> units{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024.0) return fmt::format("{:.0f} B", bytes);
    std::size_t u = 0;
    while (bytes >= 1024.0 && u + 1 < units.size()) {
        bytes /= 1024.0;
        ++u;
    }
    return fmt::format("{:.2f} {}", bytes, units[u]);
}

}  // namespace headwise::params
