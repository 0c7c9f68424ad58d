#include "headwise/model/bert.hpp"

#include "headwise/model/json_object.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>

namespace headwise::bert {

namespace fs = std::filesystem;

fs::path model_dir() {
    if (const char* dir = std::getenv("HEADWISE_MODEL_DIR"); dir != nullptr && *dir != '\0') return dir;
    fs::path base;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
        base = xdg;
    } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
        base = fs::path(home) / ".cache";
    } else {
        base = ".cache";
    }
    return base / "headwise" / "models" / "all-MiniLM-L6-v2";
}

void require_model(const fs::path& dir) {
    std::vector<std::string> missing;
    for (const char* name : {"model.safetensors", "vocab.txt", "config.json"}) {
        std::error_code ec;
        if (!fs::is_regular_file(dir / name, ec)) missing.emplace_back(name);
    }
    if (!missing.empty()) {
        throw model_missing(
            fmt::format("the all-MiniLM-L6-v2 model is not in {} (no {}): run scripts/fetch-model "
                        "(./headwise run all does it), or set HEADWISE_MODEL_DIR to a folder with "
                        "model.safetensors, vocab.txt and config.json",
                        dir.string(), fmt::join(missing, ", ")));
    }
}

Config read_config(const fs::path& config_json) {
    const std::string file = config_json.string();
    std::ifstream in(config_json);
    if (!in) throw usage_error(fmt::format("{}: cannot read", file));
    nlohmann::json j = parse_json_object(in, file, "the config");
    auto size = [&](const char* key, std::size_t low, std::size_t high) {
        if (!j.contains(key) || !j[key].is_number_unsigned())
            throw usage_error(fmt::format("{}: \"{}\" is missing or not a positive integer", file, key));
        const auto v = j[key].get<std::uint64_t>();
        if (v < low || v > high)
            throw usage_error(fmt::format("{}: \"{}\" = {} is outside {}..{}", file, key, v, low, high));
        return static_cast<std::size_t>(v);
    };
    Config c;
    c.vocab_size = size("vocab_size", 5, 1u << 20);
    c.d_model = size("hidden_size", 1, 8192);
    c.layers = size("num_hidden_layers", 1, 256);
    c.heads = size("num_attention_heads", 1, 256);
    c.d_ffn = size("intermediate_size", 1, 65536);
    c.max_positions = size("max_position_embeddings", 2, 65536);
    c.type_vocab_size = size("type_vocab_size", 1, 16);
    if (c.d_model % c.heads != 0) {
        throw usage_error(
            fmt::format("{}: hidden_size {} is not divisible by num_attention_heads {}", file, c.d_model, c.heads));
    }
    if (j.contains("layer_norm_eps")) {
        if (!j["layer_norm_eps"].is_number() || !(j["layer_norm_eps"].get<double>() > 0.0))
            throw usage_error(fmt::format("{}: layer_norm_eps must be a positive number", file));
        c.layer_norm_eps = static_cast<float>(j["layer_norm_eps"].get<double>());
    }
    const std::string act = j.value("hidden_act", std::string("gelu"));
    if (act != "gelu")
        throw usage_error(
            fmt::format("{}: hidden_act \"{}\" is not supported (only \"gelu\", the erf form)", file, act));
    const std::string pos = j.value("position_embedding_type", std::string("absolute"));
    if (pos != "absolute")
        throw usage_error(fmt::format("{}: position_embedding_type \"{}\" is not supported", file, pos));
    return c;
}

Model Model::load(const fs::path& dir) {
    require_model(dir);
    Config config = read_config(dir / "config.json");
    WordPiece vocab = WordPiece::load(dir / "vocab.txt");
    const safetensors::File file = safetensors::File::open(dir / "model.safetensors");
    return from_safetensors(file, config, std::move(vocab));
}

Model Model::from_safetensors(const safetensors::File& file, Config config, WordPiece vocab) {
    if (vocab.size() != config.vocab_size) {
        throw usage_error(fmt::format("vocab.txt has {} tokens but config.json says vocab_size = {}", vocab.size(),
                                      config.vocab_size));
    }
    const std::string prefix = file.contains("bert.embeddings.word_embeddings.weight") ? "bert." : "";
    const std::size_t d = config.d_model, f = config.d_ffn;
    auto t1 = [&](const std::string& name, std::size_t n) { return file.tensor<1>(prefix + name, {n}); };
    auto t2 = [&](const std::string& name, std::size_t r, std::size_t c) {
        return file.tensor<2>(prefix + name, {r, c});
    };
    Model m{config, std::move(vocab), {}, {}, {}, {}, {}, {}};
    m.word_embeddings = t2("embeddings.word_embeddings.weight", config.vocab_size, d);
    m.position_embeddings = t2("embeddings.position_embeddings.weight", config.max_positions, d);
    m.token_type_embeddings = t2("embeddings.token_type_embeddings.weight", config.type_vocab_size, d);
    m.embed_ln_gamma = t1("embeddings.LayerNorm.weight", d);
    m.embed_ln_beta = t1("embeddings.LayerNorm.bias", d);
    for (std::size_t l = 0; l < config.layers; ++l) {
        const std::string p = fmt::format("encoder.layer.{}.", l);
        Layer layer;
        layer.attention.heads = config.heads;
        // [W_q; W_k; W_v] stacked as rows, nn.MultiheadAttention's in_proj layout.
        layer.attention.in_proj_weight = Tensor2::from_shape({3 * d, d});
        layer.attention.in_proj_bias = Tensor1::from_shape({3 * d});
        const char* qkv[] = {"query", "key", "value"};
        for (std::size_t which = 0; which < 3; ++which) {
            const Tensor2 w = t2(p + "attention.self." + qkv[which] + ".weight", d, d);
            const Tensor1 b = t1(p + "attention.self." + qkv[which] + ".bias", d);
            std::copy(w.begin(), w.end(), layer.attention.in_proj_weight.data() + which * d * d);
            std::copy(b.begin(), b.end(), layer.attention.in_proj_bias.data() + which * d);
        }
        layer.attention.out_proj_weight = t2(p + "attention.output.dense.weight", d, d);
        layer.attention.out_proj_bias = t1(p + "attention.output.dense.bias", d);
        layer.ln1_gamma = t1(p + "attention.output.LayerNorm.weight", d);
        layer.ln1_beta = t1(p + "attention.output.LayerNorm.bias", d);
        layer.w_1 = t2(p + "intermediate.dense.weight", f, d);
        layer.b_1 = t1(p + "intermediate.dense.bias", f);
        layer.w_2 = t2(p + "output.dense.weight", d, f);
        layer.b_2 = t1(p + "output.dense.bias", d);
        layer.ln2_gamma = t1(p + "output.LayerNorm.weight", d);
        layer.ln2_beta = t1(p + "output.LayerNorm.bias", d);
        layer.attention.validate();
        m.layers.push_back(std::move(layer));
    }
    return m;
}

Layer Layer::without_head(std::size_t head) const {
    if (head >= attention.heads)
        throw usage_error(fmt::format("no head {}: the layer has {} heads", head, attention.heads));
    Layer l = *this;
    Tensor2& w_o = l.attention.out_proj_weight;  // (d_model, d_model): column c reads merged feature c
    const std::size_t d_head = attention.d_model() / attention.heads;
    for (std::size_t r = 0; r < w_o.shape()[0]; ++r)
        for (std::size_t c = head * d_head; c < (head + 1) * d_head; ++c) w_o(r, c) = 0.0f;
    return l;
}

Batch make_batch(const std::vector<std::vector<std::int32_t>>& ids, std::int32_t pad_id) {
    if (ids.empty()) throw usage_error("a batch needs at least one sentence");
    std::size_t n = 0;
    for (const auto& row : ids) n = std::max(n, row.size());
    if (n == 0) throw usage_error("a batch of empty sentences");
    Batch b;
    b.padding = Mask2::from_shape({ids.size(), n});
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i].empty()) throw usage_error(fmt::format("sentence {} of the batch has no tokens", i));
        std::vector<std::int32_t> row = ids[i];
        row.resize(n, pad_id);
        for (std::size_t j = 0; j < n; ++j) b.padding(i, j) = j >= ids[i].size();
        b.ids.push_back(std::move(row));
    }
    return b;
}

Batch tokenize(const Model& model, const std::vector<std::string>& texts) {
    std::vector<std::vector<std::int32_t>> ids;
    for (const std::string& t : texts) ids.push_back(model.vocab.encode(t, model.config.max_positions).ids);
    return make_batch(ids, model.vocab.pad_id());
}

Pair encode_pair(const Model& model, const std::string& a, const std::string& b) {
    const std::size_t most = model.config.max_positions;
    const auto first = model.vocab.encode(a, most), second = model.vocab.encode(b, most);  // [CLS] ... [SEP] each
    const std::size_t n = first.ids.size() + second.ids.size() - 1;                        // b's [CLS] dropped
    if (n > most) {
        throw usage_error(
            fmt::format("the pair is {} tokens long with [CLS] and both [SEP]; the model takes at most {}", n, most));
    }
    Pair p;
    p.boundary = first.ids.size();
    std::vector<std::int32_t> ids = first.ids;
    ids.insert(ids.end(), second.ids.begin() + 1, second.ids.end());
    p.tokens = first.tokens;
    p.tokens.insert(p.tokens.end(), second.tokens.begin() + 1, second.tokens.end());
    p.batch = make_batch({ids}, model.vocab.pad_id());
    std::vector<std::int32_t> types(n, 1);
    std::fill(types.begin(), types.begin() + static_cast<std::ptrdiff_t>(p.boundary), 0);
    p.batch.token_types = {types};
    return p;
}

Tensor3 embed(const Model& model, const Batch& batch) {
    const std::size_t B = batch.size(), N = batch.seq(), d = model.config.d_model;
    if (N > model.config.max_positions) {
        throw usage_error(
            fmt::format("{} tokens are more than the model's {} positions", N, model.config.max_positions));
    }
    if (!batch.token_types.empty()) {
        bool fits = batch.token_types.size() == B;
        for (std::size_t b = 0; fits && b < B; ++b) fits = batch.token_types[b].size() == N;
        if (!fits) throw usage_error(fmt::format("token types must be ({}, {}) like the ids", B, N));
    }
    Tensor3 x = Tensor3::from_shape({B, N, d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < N; ++i) {
            const std::int32_t id = batch.ids[b][i];
            if (id < 0 || static_cast<std::size_t>(id) >= model.config.vocab_size) {
                throw usage_error(
                    fmt::format("token id {} is outside the vocabulary (0..{})", id, model.config.vocab_size - 1));
            }
            const float* word = model.word_embeddings.data() + static_cast<std::size_t>(id) * d;
            const float* pos = model.position_embeddings.data() + i * d;
            const std::int32_t t = batch.token_types.empty() ? 0 : batch.token_types[b][i];  // 0 or 1 (a pair)
            if (t < 0 || static_cast<std::size_t>(t) >= model.config.type_vocab_size) {
                throw usage_error(fmt::format("token type {} is outside 0..{}", t, model.config.type_vocab_size - 1));
            }
            const float* type = model.token_type_embeddings.data() + static_cast<std::size_t>(t) * d;
            float* out = x.data() + (b * N + i) * d;
            for (std::size_t c = 0; c < d; ++c) out[c] = word[c] + pos[c] + type[c];
        }
    return layer_norm(x, model.embed_ln_gamma, model.embed_ln_beta, model.config.layer_norm_eps);
}

Tensor3 layer_norm(const Tensor3& x, const Tensor1& gamma, const Tensor1& beta, float eps) {
    const std::size_t d = x.shape()[2], rows = x.shape()[0] * x.shape()[1];
    if (gamma.size() != d || beta.size() != d) {
        throw usage_error(fmt::format("layer_norm: gamma and beta must have {} entries, got {} and {}", d, gamma.size(),
                                      beta.size()));
    }
    Tensor3 y = Tensor3::from_shape(x.shape());
    for (std::size_t r = 0; r < rows; ++r) {
        const float* in = x.data() + r * d;
        float* out = y.data() + r * d;
        double mean = 0.0, var = 0.0;
        for (std::size_t c = 0; c < d; ++c) mean += in[c];
        mean /= static_cast<double>(d);
        for (std::size_t c = 0; c < d; ++c) var += (in[c] - mean) * (in[c] - mean);
        var /= static_cast<double>(d);  // biased variance, as torch.nn.LayerNorm
        const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
        for (std::size_t c = 0; c < d; ++c) out[c] = static_cast<float>((in[c] - mean) * inv) * gamma(c) + beta(c);
    }
    return y;
}

Tensor3 gelu(Tensor3 x) {
    for (float& v : x) v = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    return x;
}

Tensor3 encoder_layer(const Layer& layer, const Tensor3& x, const Mask2& padding, float eps, Tensor4* weights) {
    AttentionOptions options;
    options.key_padding_mask = &padding;
    const Tensor3 a = layer.attention.forward(x, options, weights);             // (B, N, d_model)
    const Tensor3 h = layer_norm(x + a, layer.ln1_gamma, layer.ln1_beta, eps);  // (B, N, d_model)
    const Tensor3 f =
        linear(gelu(linear(h, layer.w_1, layer.b_1)), layer.w_2, layer.b_2);  // (B, N, d_ffn) -> (B, N, d_model)
    return layer_norm(h + f, layer.ln2_gamma, layer.ln2_beta, eps);
}

Tensor2 mean_pool_normalize(const Tensor3& x, const Mask2& padding) {
    const std::size_t B = x.shape()[0], N = x.shape()[1], d = x.shape()[2];
    Tensor2 out = Tensor2::from_shape({B, d});
    std::vector<double> sum(d);
    for (std::size_t b = 0; b < B; ++b) {
        std::fill(sum.begin(), sum.end(), 0.0);
        std::size_t real = 0;
        for (std::size_t i = 0; i < N; ++i) {
            if (padding(b, i)) continue;
            ++real;
            for (std::size_t c = 0; c < d; ++c) sum[c] += x(b, i, c);
        }
        double norm = 0.0;
        for (std::size_t c = 0; c < d; ++c) {
            sum[c] /= static_cast<double>(std::max<std::size_t>(real, 1));
            norm += sum[c] * sum[c];
        }
        norm = std::max(std::sqrt(norm), 1e-12);  // torch.nn.functional.normalize's floor
        for (std::size_t c = 0; c < d; ++c) out(b, c) = static_cast<float>(sum[c] / norm);
    }
    return out;
}

Outputs forward(const Model& model, const Batch& batch, const ForwardOptions& options) {
    Outputs o;
    Tensor3 x = embed(model, batch);
    if (options.keep_hidden) o.hidden.push_back(x);
    if (options.ablate_layer && *options.ablate_layer >= model.layers.size()) {
        throw usage_error(fmt::format("no layer {}: the model has {}", *options.ablate_layer, model.layers.size()));
    }
    for (std::size_t l = 0; l < model.layers.size(); ++l) {
        const bool ablate = options.ablate_layer == l && options.ablate_head;
        const Layer ablated = ablate ? model.layers[l].without_head(*options.ablate_head) : Layer{};
        const Layer& layer = ablate ? ablated : model.layers[l];
        Tensor4 w;
        x = encoder_layer(layer, x, batch.padding, model.config.layer_norm_eps, options.keep_attention ? &w : nullptr);
        if (options.keep_attention) o.attention.push_back(std::move(w));
        if (options.keep_hidden) o.hidden.push_back(x);
    }
    o.embedding = mean_pool_normalize(x, batch.padding);
    o.last = std::move(x);
    return o;
}

double cosine(const float* a, const float* b, std::size_t n) {
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    return ab / std::max(std::sqrt(aa * bb), 1e-30);
}

}  // namespace headwise::bert
