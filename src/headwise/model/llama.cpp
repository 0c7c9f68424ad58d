#include "headwise/model/llama.hpp"

#include "headwise/base/cli.hpp"
#include "headwise/fast/blas.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/fast/team.hpp"
#include "headwise/fast/vexp.hpp"
#include "headwise/model/quant.hpp"
#include "headwise/model/quant_dot.hpp"
#include "headwise/reference/positions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>

namespace headwise::llama {

// ---------------------------------------------------------------------------------------------
// The file: config, tensors, tokenizer.

namespace {

std::size_t size_key(const gguf::File& file, std::string_view key) {
    const std::uint64_t value = file.get_uint(key);
    if (value == 0 || value > (std::uint64_t{1} << 24))
        throw usage_error(
            fmt::format("{}: {} = {} is not a size a decoder can have", file.path().string(), key, value));
    return static_cast<std::size_t>(value);
}

const gguf::TensorInfo& tensor_of_shape(const gguf::File& file, const std::string& name,
                                        std::vector<std::size_t> shape) {
    const gguf::TensorInfo& t = file.tensor(name);
    if (t.shape != shape) {
        auto text = [](const std::vector<std::size_t>& s) { return fmt::format("({})", fmt::join(s, ", ")); };
        throw usage_error(fmt::format("{}: tensor {} is {}, where the config makes it {}", file.path().string(), name,
                                      text(t.shape), text(shape)));
    }
    return t;
}

// Matrices must be in a type the fast path multiplies on its blocks; norms in float32.
void require_type(const gguf::File& file, const gguf::TensorInfo& t, std::initializer_list<gguf::Type> types) {
    for (gguf::Type type : types)
        if (t.type == type) return;
    throw usage_error(fmt::format("{}: tensor {} is {}, which lesson 12's decoder does not multiply",
                                  file.path().string(), t.name, gguf::to_string(t.type)));
}

}  // namespace

Config Config::from(const gguf::File& file) {
    const std::string arch = file.get_string("general.architecture");
    if (arch != "llama")
        throw usage_error(fmt::format("{}: general.architecture is '{}', not 'llama'", file.path().string(), arch));
    Config c;
    c.layers = size_key(file, "llama.block_count");
    c.d_model = size_key(file, "llama.embedding_length");
    c.heads = size_key(file, "llama.attention.head_count");
    c.kv_heads = size_key(file, "llama.attention.head_count_kv");
    c.d_ff = size_key(file, "llama.feed_forward_length");
    c.context = size_key(file, "llama.context_length");
    c.vocab = file.get_strings("tokenizer.ggml.tokens").size();
    c.rope_base = file.get_float("llama.rope.freq_base");
    c.rms_eps = static_cast<float>(file.get_float("llama.attention.layer_norm_rms_epsilon"));
    const std::string where = file.path().string();
    if (c.d_model % c.heads != 0)
        throw usage_error(fmt::format("{}: d_model {} does not split into {} heads", where, c.d_model, c.heads));
    c.d_head = c.d_model / c.heads;
    if (c.heads % c.kv_heads != 0)
        throw usage_error(
            fmt::format("{}: {} key/value heads do not divide {} query heads", where, c.kv_heads, c.heads));
    if (c.d_head % 2 != 0 || c.d_model % quant::block != 0 || c.d_ff % quant::block != 0)
        throw usage_error(
            fmt::format("{}: d_head {}, d_model {}, d_ff {}: RoPE needs an even d_head and the blocks a "
                        "multiple of 32",
                        where, c.d_head, c.d_model, c.d_ff));
    if (!(c.rope_base > 1.0) || !(c.rms_eps > 0.0f))
        throw usage_error(
            fmt::format("{}: rope base {} or RMSNorm eps {} out of range", where, c.rope_base, c.rms_eps));
    return c;
}

std::filesystem::path default_model_path() {
    const char* dir = std::getenv("HEADWISE_DECODER_DIR");
    std::filesystem::path folder;
    if (dir != nullptr && *dir != '\0') {
        folder = dir;
    } else {
        const char* cache = std::getenv("XDG_CACHE_HOME");
        const char* home = std::getenv("HOME");
        folder = cache != nullptr && *cache != '\0' ? std::filesystem::path(cache)
                                                    : std::filesystem::path(home != nullptr ? home : ".") / ".cache";
        folder /= "headwise/models/SmolLM2-135M-Instruct";
    }
    return folder / "SmolLM2-135M-Instruct.Q4_1.gguf";
}

std::string_view to_string(Path path) { return path == Path::exact ? "exact" : "fast"; }

struct Model::Cache {
    std::mutex mutex;
    std::map<const gguf::TensorInfo*, std::vector<float>> tensors;
};

Model Model::open(const std::filesystem::path& path, WeightLayout layout) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error))
        throw usage_error(
            fmt::format("the decoder's model is not in {}: scripts/fetch-model fetches "
                        "SmolLM2-135M-Instruct there (about 98 MB, once); HEADWISE_DECODER_DIR names a "
                        "folder that already has {}",
                        path.parent_path().string(), path.filename().string()));
    Model m;
    // As in the file: mapped, never copied (exercise 12's grader, ~0.3 s of its decode check).
    m.file_ = std::make_unique<gguf::File>(layout == WeightLayout::as_in_file ? gguf::File::map(path)
                                                                              : gguf::File::open(path));
    const gguf::File& f = *m.file_;
    m.config_ = Config::from(f);
    const Config& c = m.config_;
    m.embedding_ = &tensor_of_shape(f, "token_embd.weight", {c.vocab, c.d_model});
    require_type(f, *m.embedding_, {gguf::Type::q8_0, gguf::Type::q4_1});
    m.output_norm_ = &tensor_of_shape(f, "output_norm.weight", {c.d_model});
    require_type(f, *m.output_norm_, {gguf::Type::f32});
    if (f.contains("output.weight"))
        throw usage_error(
            fmt::format("{}: has its own output.weight; lesson 12's decoder expects it tied to the "
                        "token embedding",
                        path.string()));
    for (std::size_t l = 0; l < c.layers; ++l) {
        const std::string p = fmt::format("blk.{}.", l);
        Block b{};
        b.attn_norm = &tensor_of_shape(f, p + "attn_norm.weight", {c.d_model});
        b.w_q = &tensor_of_shape(f, p + "attn_q.weight", {c.heads * c.d_head, c.d_model});
        b.w_k = &tensor_of_shape(f, p + "attn_k.weight", {c.kv_width(), c.d_model});
        b.w_v = &tensor_of_shape(f, p + "attn_v.weight", {c.kv_width(), c.d_model});
        b.w_o = &tensor_of_shape(f, p + "attn_output.weight", {c.d_model, c.heads * c.d_head});
        b.ffn_norm = &tensor_of_shape(f, p + "ffn_norm.weight", {c.d_model});
        b.w_gate = &tensor_of_shape(f, p + "ffn_gate.weight", {c.d_ff, c.d_model});
        b.w_up = &tensor_of_shape(f, p + "ffn_up.weight", {c.d_ff, c.d_model});
        b.w_down = &tensor_of_shape(f, p + "ffn_down.weight", {c.d_model, c.d_ff});
        for (const gguf::TensorInfo* t : {b.attn_norm, b.ffn_norm}) require_type(f, *t, {gguf::Type::f32});
        for (const gguf::TensorInfo* t : {b.w_q, b.w_k, b.w_v, b.w_o, b.w_gate, b.w_up, b.w_down})
            require_type(f, *t, {gguf::Type::q4_1, gguf::Type::q8_0});
        m.blocks_.push_back(b);
    }
    // Where the AVX-512 product runs, the Q4_1 matrices are regrouped in place, sixteen rows side by
    // side (quant.hpp's panels): each of its 512-bit registers then holds 4 bytes of 16 rows, and
    // a product does ~2x fewer instructions per byte than on the file's row-by-row blocks.
    if (layout == WeightLayout::fastest && quant::active_isa() == Isa::avx512)
        for (const Block& b : m.blocks_)
            for (const gguf::TensorInfo* t : {b.w_q, b.w_k, b.w_v, b.w_o, b.w_gate, b.w_up, b.w_down})
                if (t->type == gguf::Type::q4_1 && t->rows() % quant::panel_rows == 0)
                    m.file_->rewrite(t->name, gguf::Layout::panels16, quant::regroup_in_panels);
    static const std::vector<std::int64_t> no_types;
    m.tokenizer_ = std::make_unique<bpe::Tokenizer>(
        f.get_strings("tokenizer.ggml.tokens"), f.get_strings("tokenizer.ggml.merges"),
        f.has("tokenizer.ggml.token_type") ? f.get_ints("tokenizer.ggml.token_type") : no_types);
    const std::uint64_t eos = f.get_uint("tokenizer.ggml.eos_token_id");
    if (eos >= c.vocab)
        throw usage_error(fmt::format("{}: eos token id {} is past the vocabulary", path.string(), eos));
    m.eos_ = static_cast<std::int32_t>(eos);
    m.im_end_ = m.tokenizer_->find("<|im_end|>");
    m.fp32_ = std::make_shared<Cache>();
    return m;
}

std::string Model::chat_prompt(std::string_view user) const {
    const bool chatml = file_->has("tokenizer.chat_template") &&
                        file_->get_string("tokenizer.chat_template").find("<|im_start|>") != std::string::npos;
    if (!chatml || im_end_ < 0 || tokenizer_->find("<|im_start|>") < 0)
        throw usage_error(fmt::format("{}: --chat needs a ChatML chat template (<|im_start|> ... <|im_end|>)",
                                      file_->path().string()));
    return fmt::format(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
        user);
}

const float* Model::dequantized(const gguf::TensorInfo& tensor) const {
    const std::lock_guard lock(fp32_->mutex);
    auto [it, fresh] = fp32_->tensors.try_emplace(&tensor);
    if (fresh) it->second = quant::dequantize(tensor);
    return it->second.data();
}

std::uint64_t Model::bytes_per_token() const {
    std::uint64_t bytes = embedding_->bytes + embedding_->row_bytes() + output_norm_->bytes;
    for (const Block& b : blocks_)
        for (const gguf::TensorInfo* t :
             {b.attn_norm, b.w_q, b.w_k, b.w_v, b.w_o, b.ffn_norm, b.w_gate, b.w_up, b.w_down})
            bytes += t->bytes;
    return bytes;
}

// ---------------------------------------------------------------------------------------------
// A forward pass.

namespace {

// Up to this many tokens the fast path multiplies on the blocks (quantized activations, integer
// dot products: each task's 32 weight rows stay in cache while every token passes over them);
// above it, each matrix dequantized and multiplied by BLAS, whose packing of the float32 weights
// costs the same for 8 tokens as for 512 (measured: the integer products win up to ~32 tokens).
constexpr std::size_t max_integer_tokens = 32;
// The most of a weight matrix the fast path holds in float32 at once (the whole of any block's
// matrix, 3.5 MiB at most; the 113 MB output matrix in slices).
constexpr std::size_t float_block_bytes = std::size_t{8} << 20;
// Tokens one forward step takes at once (a longer prompt is run in pieces of this many).
constexpr std::size_t max_step = 512;

// y (n, d) = x / sqrt(mean(x^2) + eps) * weight, row by row.
void rms_norm(const float* x, const float* weight, std::size_t n, std::size_t d, float eps, float* y) {
    for (std::size_t i = 0; i < n; ++i, x += d, y += d) {
        double squares = 0.0;
        for (std::size_t c = 0; c < d; ++c) squares += double(x[c]) * x[c];
        const float scale = static_cast<float>(1.0 / std::sqrt(squares / double(d) + eps));
        for (std::size_t c = 0; c < d; ++c) y[c] = x[c] * scale * weight[c];
    }
}

// g <- silu(g) * u, silu(g) = g / (1 + exp(-g)), exp by the library's vectorised one (std::exp one
// float at a time, 1536 of them a layer, was a tenth of a decode step).
void swiglu(float* g, const float* u, std::size_t count) {
    thread_local std::vector<float> e;
    e.resize(count);
    for (std::size_t i = 0; i < count; ++i) e[i] = -g[i];
    fast::exp_shifted_sum(e.data(), count, 0.0f);  // e = exp(-g), -g clamped at 88 (g / 1.7e38 is 0)
    for (std::size_t i = 0; i < count; ++i) g[i] = g[i] / (1.0f + e[i]) * u[i];
}

void add(float* x, const float* y, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) x[i] += y[i];
}

}  // namespace

struct Session::Scratch {
    std::vector<float> x, h, q, k, v, att, g, u, out;  // (n, width) each
    std::vector<quant::QuantizedRow> qx;               // each token's activation row, quantized per block
    std::vector<float> weights;                        // rows of a weight matrix in float32 (fast path, prefill)
    RopeAngles angles;                                 // RoPE's cos and sin at this step's positions
};

Session::Session(const Model& model, Path path, std::size_t capacity, std::size_t threads)
    : model_(model), path_(path), capacity_(capacity) {
    const Config& c = model.config();
    if (capacity == 0 || capacity > c.context)
        throw usage_error(fmt::format("a sequence of {} tokens: this model takes 1 to {}", capacity, c.context));
    cli::require_memory(c.layers * 2 * c.kv_width() * capacity * sizeof(float), "the KV cache");
    for (std::size_t l = 0; l < c.layers; ++l) caches_.emplace_back(1, c.kv_heads, c.d_head, capacity);
    team_ = std::make_unique<fast::Team>(threads);
    scratch_ = std::make_unique<Scratch>();
    if (path == Path::exact) {
        // Dequantize everything now, so that no forward pass is timed with it.
        model.dequantized(model.embedding());
        for (const Block& b : model.blocks())
            for (const gguf::TensorInfo* t : {b.w_q, b.w_k, b.w_v, b.w_o, b.w_gate, b.w_up, b.w_down})
                model.dequantized(*t);
    }
    kept_q_.resize(c.layers);
}

Session::~Session() = default;

void Session::clear() {
    for (KVCache& cache : caches_) cache.clear();
}

// y (n, out) = x (n, in) . W^T for each product, all of the same input x (q, k and v; gate and up:
// one wake-up of the team for all of them).
//   Up to max_integer_tokens on the fast path: x quantized per block, the rows of every W shared
//   out in one contiguous share per thread, each row an integer dot product on its blocks.
//   Otherwise: W in float32 (the exact path's copy; on the fast path dequantized now, by the team,
//   at most float_block_bytes of it at a time), then the tokens shared out, each core one BLAS call
//   on its rows of x against all of W.
void Session::linear(std::initializer_list<Product> products, const float* x, std::size_t n) {
    const std::size_t in = products.begin()->w->columns();
    if (path_ == Path::fast && n <= max_integer_tokens) {
        Scratch& s = *scratch_;
        if (s.qx.size() < n) s.qx.resize(n);
        for (std::size_t i = 0; i < n; ++i) s.qx[i].quantize(x + i * in, in);
        // each matrix in one contiguous share of rows per thread: a core that reads one long run of
        // rows keeps its prefetcher streaming (two threads taking turns at 32-row tasks ran no faster
        // than one)
        const std::size_t shares = team_->size(), count = products.size();
        const Product* list = products.begin();
        std::array<std::size_t, 3> outs{};  // each product's rows (at most three products share x)
        for (std::size_t p = 0; p < count; ++p) outs.at(p) = list[p].w->rows();
        team_->run(count * shares, [&](std::size_t task, std::size_t) {
            // a multiple of 16 rows (a matrix in panels is multiplied 16 rows at a time)
            const std::size_t p = task / shares, out = outs[p], per = (out / shares + 15) / 16 * 16;
            const std::size_t first = std::min(out, (task % shares) * per);
            const std::size_t last = task % shares == shares - 1 ? out : std::min(out, first + per);
            for (std::size_t i = 0; i < n; ++i)
                quant::matvec_rows(*list[p].w, s.qx[i], first, last, list[p].y + i * out + first);
        });
        return;
    }
    for (const Product& p : products) float_product(*p.w, x, n, p.y);
}

void Session::float_product(const gguf::TensorInfo& w, const float* x, std::size_t n, float* y) {
    const std::size_t in = w.columns(), out = w.rows(), members = team_->size();
    // token rows per task: one share per core, each at least 16 rows (a BLAS call's worth)
    const std::size_t share = std::max<std::size_t>(16, (n + members - 1) / members);
    const std::size_t token_tasks = (n + share - 1) / share;
    auto multiply = [&](const float* w_rows, std::size_t first, std::size_t last) {
        team_->run(token_tasks, [&](std::size_t task, std::size_t) {
            const std::size_t r0 = task * share, r1 = std::min(n, r0 + share);
            blas::gemm(false, true, r1 - r0, last - first, in, 1.0f, x + r0 * in, in, w_rows, in, 0.0f,
                       y + r0 * out + first, out);
        });
    };
    if (path_ == Path::exact) return multiply(model_.dequantized(w), 0, out);
    // fast path: dequantize a block of rows of W (all of a block's matrix, a slice of the output's)
    // (a multiple of 64 rows: each task's rows whole panels)
    const std::size_t block_rows = std::max<std::size_t>(64, float_block_bytes / (in * sizeof(float)) / 64 * 64);
    std::vector<float>& f32 = scratch_->weights;
    for (std::size_t first = 0; first < out; first += block_rows) {
        const std::size_t last = std::min(out, first + block_rows);
        f32.resize((last - first) * in);
        team_->run((last - first + 63) / 64, [&](std::size_t task, std::size_t) {
            const std::size_t r = first + task * 64;
            quant::dequantize_rows_fast(w, r, std::min(last, r + 64), f32.data() + (r - first) * in);
        });
        multiply(f32.data(), first, last);
    }
}

// The rotated queries of the step's n tokens against every cached key, causal.
void Session::attend(std::size_t layer, std::size_t n, std::size_t first_position) {
    const Config& c = model_.config();
    const KVCache& cache = caches_[layer];
    const std::size_t keys = first_position + n, d = c.d_head, group = c.group(), q_width = c.heads * d;
    const float* k = cache.key_storage().data();
    const float* v = cache.value_storage().data();
    const std::size_t kv_head = capacity_ * d;  // (1, H_kv, capacity, d_head)
    Scratch& s = *scratch_;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    if (n == 1) {
        // One new token: lesson 08's decode step on the cache's rows, no mask (every key is in its
        // past), each thread a contiguous run of heads: the query heads that share a K/V head
        // mostly on one core, which reads that head's keys and values from memory once (they are
        // cold: ~100 MB of weights passed since this layer's last step)
        const std::size_t shares = team_->size(), per = (c.heads + shares - 1) / shares;
        team_->run(shares, [&](std::size_t share, std::size_t) {
            attend_new_token(cache, 0, s.q.data(), c.heads, scale, s.att.data(), share * per,
                             std::min(c.heads, share * per + per));
        });
        return;
    }
    // Many new tokens: one call per K/V head, its `group` query heads reading that head's keys
    // (a head stride of 0), the mask causal from position first_position on.
    Mask2 mask;
    AttentionOptions options;
    if (first_position == 0) {
        options.causal = true;
    } else {
        mask = Mask2::from_shape({n, keys});
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < keys; ++j) mask(i, j) = j > first_position + i;
        options.attn_mask = &mask;
    }
    for (std::size_t g = 0; g < c.kv_heads; ++g) {
        const fast::AttentionShape shape{1, group, n, keys, d};
        fast::fused_attention(shape, {s.q.data() + g * group * d, n * q_width, d, q_width},
                              {k + g * kv_head, kv_head * c.kv_heads, 0, d},
                              {v + g * kv_head, kv_head * c.kv_heads, 0, d},
                              {s.att.data() + g * group * d, n * q_width, d, q_width}, scale, options);
    }
}

void Session::block(std::size_t layer, std::size_t n, std::size_t first_position) {
    const Config& c = model_.config();
    const Block& b = model_.blocks()[layer];
    Scratch& s = *scratch_;
    const std::size_t d = c.d_model, q_width = c.heads * c.d_head, kv = c.kv_width();
    auto f32 = [](const gguf::TensorInfo* t) { return reinterpret_cast<const float*>(t->data); };

    // h = rmsnorm(x); q, k, v (n, width)
    rms_norm(s.x.data(), f32(b.attn_norm), n, d, c.rms_eps, s.h.data());
    linear({{b.w_q, s.q.data()}, {b.w_k, s.k.data()}, {b.w_v, s.v.data()}}, s.h.data(), n);

    // RoPE at positions first_position .. first_position + n - 1 (their angles computed once per
    // forward pass, in forward()), adjacent pairs (GGUF's layout)
    rotate_in_place({s.q.data(), n * q_width, c.d_head, q_width}, {1, c.heads, n, c.d_head}, RopeLayout::interleaved,
                    s.angles);
    rotate_in_place({s.k.data(), n * kv, c.d_head, kv}, {1, c.kv_heads, n, c.d_head}, RopeLayout::interleaved,
                    s.angles);
    if (keep_queries_) kept_q_[layer].assign(s.q.begin(), s.q.begin() + n * q_width);

    // the cache grows by n: (1, H_kv, n, d_head) from the (n, H_kv * d_head) rows
    caches_[layer].append_rows(s.k.data(), s.v.data(), n);

    // x += attention . W_o^T
    attend(layer, n, first_position);
    linear({{b.w_o, s.out.data()}}, s.att.data(), n);
    add(s.x.data(), s.out.data(), n * d);

    // x += (silu(h W_gate^T) * h W_up^T) W_down^T
    rms_norm(s.x.data(), f32(b.ffn_norm), n, d, c.rms_eps, s.h.data());
    linear({{b.w_gate, s.g.data()}, {b.w_up, s.u.data()}}, s.h.data(), n);
    swiglu(s.g.data(), s.u.data(), n * c.d_ff);
    linear({{b.w_down, s.out.data()}}, s.g.data(), n);
    add(s.x.data(), s.out.data(), n * d);
}

void Session::forward(std::span<const std::int32_t> tokens, float* logits, bool all_logits) {
    const Config& c = model_.config();
    if (tokens.empty()) throw usage_error("a forward pass needs at least one token");
    if (length() + tokens.size() > capacity_)
        throw usage_error(fmt::format("{} tokens after {} do not fit in a sequence of {} (the model's context is {})",
                                      tokens.size(), length(), capacity_, c.context));
    for (std::int32_t id : tokens)
        if (id < 0 || static_cast<std::size_t>(id) >= c.vocab)
            throw usage_error(fmt::format("token id {} is outside the vocabulary (0 .. {})", id, c.vocab - 1));
    // a long prompt in steps of max_step tokens: the scratch stays (max_step, width)
    if (tokens.size() > max_step) {
        for (std::size_t first = 0; first < tokens.size(); first += max_step) {
            const std::size_t n = std::min(max_step, tokens.size() - first);
            const bool last = first + n == tokens.size();
            if (all_logits)
                forward(tokens.subspan(first, n), logits + first * c.vocab, true);
            else if (last)
                forward(tokens.subspan(first, n), logits, false);
            else
                forward(tokens.subspan(first, n), nullptr, false);
        }
        return;
    }
    const std::size_t n = tokens.size(), first_position = length(), d = c.d_model;
    Scratch& s = *scratch_;
    for (auto* buffer : {&s.x, &s.h, &s.out}) buffer->resize(n * d);
    for (auto* buffer : {&s.q, &s.att}) buffer->resize(n * c.heads * c.d_head);
    for (auto* buffer : {&s.k, &s.v}) buffer->resize(n * c.kv_width());
    for (auto* buffer : {&s.g, &s.u}) buffer->resize(n * c.d_ff);

    std::vector<double> positions(n);
    std::iota(positions.begin(), positions.end(), double(first_position));
    s.angles = rope_angles({c.rope_base, RopeLayout::interleaved, 1.0}, c.d_head, positions);

    // x (n, d_model): each token's row of the embedding
    const gguf::TensorInfo& embedding = model_.embedding();
    for (std::size_t i = 0; i < n; ++i) quant::dequantize_row(embedding.type, embedding.row(tokens[i]), &s.x[i * d], d);
    for (std::size_t layer = 0; layer < c.layers; ++layer) block(layer, n, first_position);
    kept_first_ = first_position;
    kept_n_ = n;
    if (logits == nullptr) return;

    // logits = rmsnorm(x) E^T, for the last token or all of them
    const std::size_t rows = all_logits ? n : 1;
    const float* x_last = s.x.data() + (n - rows) * d;
    rms_norm(x_last, reinterpret_cast<const float*>(model_.output_norm().data), rows, d, c.rms_eps, s.h.data());
    linear({{&embedding, logits}}, s.h.data(), rows);
}

std::vector<float> Session::attention_weights(std::size_t layer) const {
    const Config& c = model_.config();
    if (!keep_queries_ || kept_q_.at(layer).empty())
        throw usage_error("attention_weights: call keep_queries(true) before the forward pass");
    const std::size_t n = kept_n_, keys = kept_first_ + n, d = c.d_head, q_width = c.heads * d;
    const float* k = caches_[layer].key_storage().data();
    const double scale = 1.0 / std::sqrt(double(d));
    std::vector<float> weights(c.heads * n * keys, 0.0f);  // (H, n, keys)
    std::vector<double> row(keys);
    for (std::size_t h = 0; h < c.heads; ++h) {
        const float* k_head = k + (h / c.group()) * capacity_ * d;
        for (std::size_t i = 0; i < n; ++i) {
            const float* q = kept_q_[layer].data() + i * q_width + h * d;
            const std::size_t seen = kept_first_ + i + 1;  // causal: keys 0 .. position
            double max = -std::numeric_limits<double>::infinity(), sum = 0.0;
            for (std::size_t j = 0; j < seen; ++j) {
                double dot = 0.0;
                for (std::size_t e = 0; e < d; ++e) dot += double(q[e]) * k_head[j * d + e];
                row[j] = dot * scale;
                max = std::max(max, row[j]);
            }
            for (std::size_t j = 0; j < seen; ++j) sum += (row[j] = std::exp(row[j] - max));
            for (std::size_t j = 0; j < seen; ++j) weights[(h * n + i) * keys + j] = static_cast<float>(row[j] / sum);
        }
    }
    return weights;
}

// ---------------------------------------------------------------------------------------------
// Sampling.

void validate(const Sampling& sampling) {
    if (!std::isfinite(sampling.temperature) || sampling.temperature < 0.0f)
        throw usage_error(fmt::format("--temperature {}: must be 0 (greedy) or more", sampling.temperature));
    if (!(sampling.top_p > 0.0f && sampling.top_p <= 1.0f))
        throw usage_error(fmt::format("--top-p {}: must be in (0, 1]", sampling.top_p));
}

Sampler::Sampler(const Sampling& sampling) : sampling_(sampling), state_(sampling.seed * 0x9E3779B97F4A7C15ull + 1) {
    validate(sampling);
}

std::int32_t Sampler::next(std::span<const float> logits) {
    if (sampling_.temperature == 0.0f)
        return static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    // candidates by logit, largest first; top-k keeps the first k
    candidates_.resize(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i) candidates_[i] = {logits[i], static_cast<std::int32_t>(i)};
    std::size_t keep = sampling_.top_k == 0 ? logits.size() : std::min(sampling_.top_k, logits.size());
    auto larger = [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), larger);
    // probabilities at the temperature; top-p keeps the smallest prefix that reaches p
    const double top = candidates_[0].first;
    std::vector<double> p(keep);
    double total = 0.0;
    for (std::size_t i = 0; i < keep; ++i)
        total += p[i] = std::exp((candidates_[i].first - top) / sampling_.temperature);
    double reached = 0.0;
    for (std::size_t i = 0; i < keep; ++i) {
        reached += p[i] / total;
        if (reached >= sampling_.top_p) {
            keep = i + 1;
            break;
        }
    }
    total = std::accumulate(p.begin(), p.begin() + keep, 0.0);
    // splitmix64: the same seed gives the same text on every machine
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const double u = double(z >> 11) * 0x1.0p-53 * total;
    double sum = 0.0;
    for (std::size_t i = 0; i < keep; ++i)
        if ((sum += p[i]) > u) return candidates_[i].second;
    return candidates_[keep - 1].second;
}

double mean_log_likelihood(std::span<const float> logits, std::span<const std::int32_t> ids, std::size_t vocab) {
    if (ids.size() < 2) return 0.0;
    double total = 0.0;
    for (std::size_t i = 1; i < ids.size(); ++i) {
        const float* row = logits.data() + (i - 1) * vocab;
        const double max = *std::max_element(row, row + vocab);
        double sum = 0.0;
        for (std::size_t j = 0; j < vocab; ++j) sum += std::exp(double(row[j]) - max);
        total += double(row[ids[i]]) - max - std::log(sum);
    }
    return total / double(ids.size() - 1);
}

}  // namespace headwise::llama
