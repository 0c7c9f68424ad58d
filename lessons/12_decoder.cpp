// Lesson 12 -- a real decoder writes: SmolLM2-135M-Instruct through the course's own attention.
//
// Lessons 01-11 built every part of attention: heads (02-03), the causal mask (04), the KV cache and
// grouped-query attention (08), RoPE and its two layouts (09). A modern decoder is those parts and
// three more small ones (RMSNorm, the SwiGLU feed-forward, a tied output matrix), repeated 30 times.
// This lesson opens a real one from its GGUF file -- the format llama.cpp runs -- and lets it write:
//
//   1. what is in the file: metadata, 272 tensors, their shapes and block types
//   2. one Q4_1 block of 32 weights dequantized by hand, and the error quantizing carries
//   3. text -> pieces -> ids -> text: byte-level BPE
//   4. one block's shapes at every step: (B, 9, N, 64) queries against (B, 3, N, 64) keys
//   5. the cache: prefill, then one token at a time, equal to recomputing everything
//   6. greedy and sampled continuations
//   7. the model's own heads: previous-token, induction and sink heads, measured (lessons 07, 11)
//   8. why decode is bound by memory: bytes per token against a measured read rate
//
// Everything it runs lives in src/headwise/model/ (gguf, quant, bpe, llama); `headwise generate`
// is the same decoder as a command. The model comes from scripts/fetch-model (~98 MB, once).
//
// Dimension letters: B = batch (1 here), N = tokens, H = 9 query heads, H_kv = 3 key/value heads,
// d_head = 64, d_model = 576, d_ff = 1536, V = 49152 tokens in the vocabulary.
// Run:  ./headwise run 12      or      build/lessons/12_decoder --help

#include "headwise/fast/bandwidth.hpp"
#include "headwise/io/figure.hpp"
#include "headwise/inference/kv_cache.hpp"
#include "headwise/lesson/lesson.hpp"
#include "headwise/model/head_roles.hpp"
#include "headwise/model/llama.hpp"
#include "headwise/model/quant.hpp"
#include "headwise/model/quant_dot.hpp"
#include "headwise/reference/positions.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <thread>
#include <vector>

using namespace headwise;

namespace {

// ---------------------------------------------------------------------------------------------
// Step helpers.

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// A GGUF tensor as a float32 (rows, columns) Tensor2, dequantized.
Tensor2 as_tensor2(const gguf::TensorInfo& t) {
    const std::vector<float> values = quant::dequantize(t);
    Tensor2 out = Tensor2::from_shape({t.rows(), t.columns()});
    std::copy(values.begin(), values.end(), out.begin());
    return out;
}

// x (B, N, d) / sqrt(mean(x^2) + eps) * weight
Tensor3 rms_norm(const Tensor3& x, const gguf::TensorInfo& weight, float eps) {
    const auto* w = reinterpret_cast<const float*>(weight.data);
    Tensor3 y = x;
    const std::size_t d = x.shape()[2];
    for (std::size_t b = 0; b < x.shape()[0]; ++b)
        for (std::size_t n = 0; n < x.shape()[1]; ++n) {
            double squares = 0.0;
            for (std::size_t c = 0; c < d; ++c) squares += double(x(b, n, c)) * x(b, n, c);
            const double scale = 1.0 / std::sqrt(squares / double(d) + eps);
            for (std::size_t c = 0; c < d; ++c) y(b, n, c) = float(x(b, n, c) * scale) * w[c];
        }
    return y;
}

std::vector<std::int32_t> greedy(llama::Session& session, std::span<const std::int32_t> prompt, std::size_t count,
                                 std::vector<float>& logits) {
    const std::size_t V = session.model().config().vocab;
    logits.resize(V);
    session.forward(prompt, logits.data());
    std::vector<std::int32_t> out;
    llama::Sampler sampler(llama::Sampling{});
    for (std::size_t t = 0; t < count; ++t) {
        out.push_back(sampler.next(logits));
        session.forward(std::span(&out.back(), 1), logits.data());
    }
    return out;
}

std::string quoted(const std::string& text) {
    std::string out;
    for (char ch : text) out += ch == '\n' ? std::string("\\n") : std::string(1, ch);
    return "\"" + out + "\"";
}

// ---------------------------------------------------------------------------------------------
// Steps.

void step1_the_file(const Tracer& trace, const llama::Model& model) {
    trace.section("step 1: what is in the file -- metadata, then tensors in blocks of 32");
    const gguf::File& file = model.file();
    fmt::print("  {}: GGUF version {}, {:.1f} MB, {} metadata keys, {} tensors\n", file.path().filename().string(),
               file.version(), double(file.file_bytes()) / 1e6, file.metadata().size(), file.tensors().size());
    for (const auto& e : file.metadata()) {
        if (e.key.rfind("general.", 0) == 0 && e.key != "general.architecture") continue;
        if (e.key == "tokenizer.chat_template") continue;
        fmt::print("  {:<40} {:<8} {}\n", e.key, e.type, e.value.size() > 60 ? e.value.substr(0, 57) + "..." : e.value);
    }
    std::map<std::string, std::pair<std::size_t, std::size_t>> by_type;  // type -> (tensors, bytes)
    std::size_t parameters = 0;
    for (const auto& t : file.tensors()) {
        auto& [count, bytes] = by_type[std::string(gguf::to_string(t.type))];
        ++count;
        bytes += t.bytes;
        parameters += t.count();
    }
    for (const auto& [type, cb] : by_type)
        fmt::print("  {:>4} tensors in {:<5} {:>8.1f} MB\n", cb.first, type, double(cb.second) / 1e6);
    fmt::print("  {:.1f} M parameters in {:.1f} MB: {:.2f} bits a parameter (float32 would be 32)\n", parameters / 1e6,
               double(file.file_bytes()) / 1e6, 8.0 * double(file.file_bytes()) / double(parameters));
    const llama::Config& c = model.config();
    fmt::print(
        "  config: {} blocks, d_model {}, {} query heads and {} key/value heads of d_head {}, d_ff {}, "
        "vocabulary {}, context {}, RoPE base {:g}, RMSNorm eps {:g}\n",
        c.layers, c.d_model, c.heads, c.kv_heads, c.d_head, c.d_ff, c.vocab, c.context, c.rope_base, c.rms_eps);
    trace.note(
        "GGUF lists a tensor's dimensions fastest first ([576, 49152] for the embedding); headwise reverses "
        "them once, when it reads the file, into PyTorch's order:");
    const llama::Block& b = model.blocks()[0];
    const std::pair<const gguf::TensorInfo*, std::string_view> rows[] = {
        {&model.embedding(), "V, d_model"}, {b.attn_norm, "d_model"},        {b.w_q, "H*d_head, d_model"},
        {b.w_k, "H_kv*d_head, d_model"},    {b.w_v, "H_kv*d_head, d_model"}, {b.w_o, "d_model, H*d_head"},
        {b.w_gate, "d_ff, d_model"},        {b.w_up, "d_ff, d_model"},       {b.w_down, "d_model, d_ff"}};
    for (const auto& [t, dims] : rows) {
        trace.shape_line(fmt::format("{} {}", t->name, gguf::to_string(t->type)), t->shape, dims);
    }
}

void step2_one_block_by_hand(const Tracer& trace, const llama::Model& model) {
    trace.section("step 2: one Q4_1 block by hand -- 32 weights in 20 bytes");
    const gguf::TensorInfo& w_q = *model.blocks()[0].w_q;
    const quant::BlockQ4_1 block = quant::block_q4_1(w_q, 0, 0);  // row 0's first block, as the file has it
    const float d = quant::fp16_to_float(block.d), m = quant::fp16_to_float(block.m);
    fmt::print(
        "  {} row 0, weights 0..31: d = {:.6f} (fp16 0x{:04x}), m = {:.6f} (fp16 0x{:04x}), 16 bytes of nibbles\n",
        w_q.name, d, block.d, m, block.m);
    float by_hand[32];
    for (std::size_t j = 0; j < 16; ++j) {
        by_hand[j] = d * float(block.qs[j] & 0x0F) + m;     // low nibble: weight j
        by_hand[j + 16] = d * float(block.qs[j] >> 4) + m;  // high nibble: weight j + 16
    }
    fmt::print("  byte 0 = 0x{:02x}: weight 0 = d * {} + m = {:+.6f}, weight 16 = d * {} + m = {:+.6f}\n", block.qs[0],
               block.qs[0] & 0x0F, by_hand[0], block.qs[0] >> 4, by_hand[16]);
    std::vector<float> library(w_q.columns());  // row 0, dequantized by the library
    quant::dequantize_rows(w_q, 0, 1, library.data());
    double diff = 0.0;
    for (std::size_t j = 0; j < 32; ++j) diff = std::max(diff, double(std::fabs(by_hand[j] - library[j])));
    fmt::print("  by hand vs quant::dequantize_row: max |diff| = {:.1e} over the 32 weights\n", diff);
    fmt::print(
        "  16 levels from m = {:+.4f} to m + 15 d = {:+.4f}: a weight is off by at most d / 2 = {:.4f} "
        "({:.1f}% of the block's range)\n",
        m, m + 15 * d, d / 2, 100.0 / 30.0);
    // The error quantizing carries, measured: random weights through Q4_1 and Q8_0 and back.
    Random rng(12);
    const Tensor1 x = rng.normal<1>({4096}, 0.02f);
    std::vector<quant::BlockQ4_1> q4(4096 / 32);
    std::vector<quant::BlockQ8_0> q8(4096 / 32);
    quant::quantize_row_q4_1(x.data(), q4.data(), 4096);
    quant::quantize_row_q8_0(x.data(), q8.data(), 4096);
    std::vector<float> back4(4096), back8(4096);
    quant::dequantize_row(gguf::Type::q4_1, reinterpret_cast<const std::byte*>(q4.data()), back4.data(), 4096);
    quant::dequantize_row(gguf::Type::q8_0, reinterpret_cast<const std::byte*>(q8.data()), back8.data(), 4096);
    auto rms = [&](const std::vector<float>& y) {
        double e = 0.0, s = 0.0;
        for (std::size_t i = 0; i < 4096; ++i) e += double(y[i] - x[i]) * (y[i] - x[i]), s += double(x[i]) * x[i];
        return std::sqrt(e / s);
    };
    fmt::print(
        "  4096 normal weights (std 0.02) through each format and back: relative RMS error Q4_1 {:.1f}%, "
        "Q8_0 {:.2f}%\n",
        100 * rms(back4), 100 * rms(back8));
}

void step3_tokens(const Tracer& trace, const llama::Model& model) {
    trace.section("step 3: text -> pieces -> ids -> text (byte-level BPE, 48,900 merges)");
    const bpe::Tokenizer& tok = model.tokenizer();
    for (const std::string text :
         {"The capital of France is", "Attention is all you need in 2017!", "naïve café 🙂"}) {
        const std::vector<std::string> pieces = tok.pre_tokenize(text);
        std::vector<std::string> shown;
        for (const auto& p : pieces) shown.push_back(quoted(p));
        const std::vector<std::int32_t> ids = tok.encode(text);
        std::vector<std::string> id_pieces;
        for (std::int32_t id : ids) id_pieces.push_back(fmt::format("{}:{}", id, tok.piece(id)));
        fmt::print("  {}\n    pieces {}\n    ids    {}\n    back   {}\n", quoted(text), fmt::join(shown, " "),
                   fmt::join(id_pieces, " "), quoted(tok.decode(ids)));
    }
    trace.note(
        "Each piece's bytes are mapped to printable characters (a space is 'Ġ') and merged pair by pair, the "
        "lowest-ranked merge first; a byte never merged stays a token of its own, so any text has ids.");
}

void step4_one_block(const Tracer& trace, const llama::Model& model, std::span<const std::int32_t> ids,
                     llama::Session& session) {
    trace.section("step 4: one block, step by step -- RMSNorm, GQA with RoPE, SwiGLU");
    const llama::Config& c = model.config();
    const llama::Block& b = model.blocks()[0];
    const std::size_t N = ids.size();
    // x (1, N, d_model): the tokens' rows of the embedding
    Tensor3 x = Tensor3::from_shape({1, N, c.d_model});
    for (std::size_t n = 0; n < N; ++n)
        quant::dequantize_row(model.embedding().type, model.embedding().row(ids[n]), &x(0, n, 0), c.d_model);
    trace("x = embedding[ids]", x, "B, N, d_model");
    const Tensor3 h = rms_norm(x, *b.attn_norm, c.rms_eps);  // (1, N, d_model)
    trace("h = rmsnorm(x)", h, "B, N, d_model");
    Tensor4 q = split_heads(linear(h, as_tensor2(*b.w_q)), c.heads);     // (1, H, N, d_head)
    Tensor4 k = split_heads(linear(h, as_tensor2(*b.w_k)), c.kv_heads);  // (1, H_kv, N, d_head)
    const Tensor4 v = split_heads(linear(h, as_tensor2(*b.w_v)), c.kv_heads);
    trace("q = split(h W_q^T)", q, "B, H, N, d_head");
    trace("k = split(h W_k^T)", k, "B, H_kv, N, d_head");
    trace("v = split(h W_v^T)", v, "B, H_kv, N, d_head");
    const Rope rope{c.rope_base, RopeLayout::interleaved, 1.0};
    q = apply_rope(q, rope);
    k = apply_rope(k, rope);
    trace("q, k rotated (RoPE)", q, "B, H, N, d_head");
    AttentionOptions causal;
    causal.causal = true;
    const Tensor4 heads = grouped_query_attention(q, k, v, causal);  // (1, H, N, d_head)
    trace("heads = GQA(q, k, v)", heads, "B, H, N, d_head");
    const Tensor3 attn = linear(merge_heads(heads), as_tensor2(*b.w_o));
    trace("merge, . W_o^T", attn, "B, N, d_model");
    const Tensor3 x1 = x + attn;
    const Tensor3 h2 = rms_norm(x1, *b.ffn_norm, c.rms_eps);
    const Tensor3 gate = linear(h2, as_tensor2(*b.w_gate));  // (1, N, d_ff)
    const Tensor3 up = linear(h2, as_tensor2(*b.w_up));
    trace("gate = h W_gate^T", gate, "B, N, d_ff");
    trace("up = h W_up^T", up, "B, N, d_ff");
    const Tensor3 act = gate / (1.0f + xt::exp(-gate)) * up;  // silu(gate) * up
    const Tensor3 y = x1 + linear(act, as_tensor2(*b.w_down));
    trace("x + down(silu(g) * u)", y, "B, N, d_model");
    fmt::print("  query head h reads key/value head h / {}: heads 0-2 share K/V head 0, 3-5 head 1, 6-8 head 2\n",
               c.group());
    // the decoder's own block 0 cached the same keys
    session.clear();
    std::vector<float> logits(c.vocab);
    session.forward(ids, logits.data());
    const Tensor4 cached = session.cache(0).keys();  // (1, H_kv, N, d_head)
    fmt::print("  these rotated keys vs what llama::Session cached in block 0: max |diff| = {:.1e}\n",
               max_abs_diff(cached, k));
    trace.note(
        "GGUF's q and k rows are stored permuted so that RoPE rotates adjacent pairs (lesson 09's "
        "'interleaved' layout): the same model as Hugging Face's 'half' layout, one permutation apart.");
}

void step5_cache(const Tracer& trace, const llama::Model& model, std::span<const std::int32_t> prompt) {
    trace.section("step 5: the cache -- prefill once, then one token at a time, equal to the full recompute");
    const llama::Config& c = model.config();
    const std::size_t steps = 8;
    llama::Session cached(model, llama::Path::exact, prompt.size() + steps);
    std::vector<float> logits;
    const std::vector<std::int32_t> out = greedy(cached, prompt, steps, logits);
    fmt::print(
        "  after the prompt's {} tokens and {} decode steps each block's cache holds {} positions: K {} "
        "[B, H_kv, N, d_head]\n",
        prompt.size(), steps, cached.length(), format_shape(cached.cache(0).keys().shape()));
    std::vector<std::int32_t> all(prompt.begin(), prompt.end());
    all.insert(all.end(), out.begin(), out.end());
    llama::Session full(model, llama::Path::exact, all.size());
    std::vector<float> recomputed(c.vocab);
    full.forward(all, recomputed.data());
    double diff = 0.0;
    for (std::size_t i = 0; i < c.vocab; ++i) diff = std::max(diff, double(std::fabs(recomputed[i] - logits[i])));
    fmt::print(
        "  last token's logits, cached decode vs all {} tokens recomputed: max |diff| = {:.1e} (logits of "
        "size ~10)\n",
        all.size(), diff);
    const std::size_t per_token = c.layers * 2 * c.kv_width() * sizeof(float);
    fmt::print(
        "  the cache costs {} layers x 2 (K, V) x {} x 4 bytes = {} KiB a token: {:.1f} MiB at the full "
        "context of {}; with 9 K/V heads (no GQA) it would be 3x that\n",
        c.layers, c.kv_width(), per_token / 1024, double(per_token) * c.context / (1 << 20), c.context);
}

void step6_write(const Tracer& trace, const llama::Model& model, std::uint64_t first_seed) {
    trace.section("step 6: the model writes -- greedy, then sampled");
    const bpe::Tokenizer& tok = model.tokenizer();
    const std::string prompt = "The capital of France is";
    const std::vector<std::int32_t> ids = tok.encode(prompt);
    llama::Session session(model, llama::Path::fast, ids.size() + 24);
    std::vector<float> logits;
    const std::vector<std::int32_t> out = greedy(session, ids, 16, logits);
    fmt::print("  greedy:       {} -> {}\n", quoted(prompt), quoted(tok.decode(out)));
    for (std::uint64_t seed : {first_seed, first_seed + 1}) {
        session.clear();
        llama::Sampler sampler({0.8f, 40, 0.9f, seed});
        std::vector<std::int32_t> sampled;
        std::vector<float> l(model.config().vocab);
        session.forward(ids, l.data());
        for (int t = 0; t < 16; ++t) {
            sampled.push_back(sampler.next(l));
            session.forward(std::span(&sampled.back(), 1), l.data());
        }
        fmt::print("  T=0.8 seed {}: {} -> {}\n", seed, quoted(prompt), quoted(tok.decode(sampled)));
    }
    trace.note(
        "Greedy takes the largest logit every time (the same text on every run); sampling divides the logits "
        "by T, keeps the 40 likeliest tokens whose probability reaches 0.9, and draws one.");
}

void step7_heads(const Tracer& trace, const llama::Model& model, std::size_t L, std::uint64_t seed,
                 const std::string& figures_dir) {
    trace.section("step 7: the model's own heads -- previous-token, induction, sink (lessons 07 and 11's measures)");
    const llama::Config& c = model.config();
    // L random ordinary tokens (--repeat, 40), then the same L again: an induction head, on the second copy,
    // looks at the token after the current token's first occurrence.
    Random rng(seed + 6);
    std::vector<std::int32_t> ids;
    for (std::size_t i = 0; i < L; ++i) ids.push_back(static_cast<std::int32_t>(1000 + rng.next_u64() % 20000));
    for (std::size_t i = 0; i < L; ++i) ids.push_back(ids[i]);
    const std::size_t N = ids.size();
    llama::Session session(model, llama::Path::exact, N);
    session.keep_queries(true);
    std::vector<float> logits(N * c.vocab);
    session.forward(ids, logits.data(), true);
    struct Score {
        double value;
        std::size_t layer, head;
    };
    std::vector<Score> previous, induction, sink;
    for (std::size_t l = 0; l < c.layers; ++l) {
        const std::vector<float> w = session.attention_weights(l);  // (H, N, N)
        for (std::size_t h = 0; h < c.heads; ++h) {
            Tensor2 head = Tensor2::from_shape({N, N});
            std::copy(w.begin() + h * N * N, w.begin() + (h + 1) * N * N, head.begin());
            previous.push_back({roles::previous_token(head, N), l, h});
            sink.push_back({roles::share_on(head, N, 0), l, h});
            double ind = 0.0;  // lesson 11: second copy's token i looks at first copy's i + 1
            for (std::size_t i = 0; i + 1 < L; ++i) ind += head(L + i, i + 1);
            induction.push_back({ind / double(L - 1), l, h});
        }
    }
    auto top = [N](std::vector<Score> s, const char* what) {
        std::sort(s.begin(), s.end(), [](const Score& a, const Score& b) { return a.value > b.value; });
        std::vector<std::string> names;
        for (std::size_t i = 0; i < 3; ++i)
            names.push_back(fmt::format("L{}H{} {:.2f}", s[i].layer, s[i].head, s[i].value));
        fmt::print("  {:<28} {}   (chance ~ 1/N = {:.3f})\n", what, fmt::join(names, ", "), 1.0 / double(N));
        return s[0];
    };
    const Score p = top(previous, "strongest previous-token:");
    const Score ind = top(induction, "strongest induction:");
    const Score s = top(sink, "most weight on token 0:");
    // the copy the induction heads make possible: loss on the second copy vs the first
    auto loss = [&](std::size_t from, std::size_t to) {
        return -llama::mean_log_likelihood(std::span(logits).subspan(from * c.vocab, (to - from) * c.vocab),
                                           std::span(ids).subspan(from, to - from), c.vocab);
    };
    const double first = loss(0, L), second = loss(L, N);
    fmt::print("  next-token loss on the first copy {:.2f} nats (ln V = {:.2f}), on the repeat {:.2f}\n", first,
               std::log(double(c.vocab)), second);
    if (second < first / 2)
        fmt::print(
            "  the repeat is predicted: the model copies, and layer {}'s head {} (induction {:.2f}) is where "
            "it looks\n",
            ind.layer, ind.head, ind.value);
    if (p.value > 0.5)
        fmt::print(
            "  L{}H{} puts {:.0f}% of its weight on the token before: a previous-token head, as lesson 07 found "
            "in BERT\n",
            p.layer, p.head, 100 * p.value);
    if (s.value > 0.5)
        fmt::print("  L{}H{} puts {:.0f}% of its attention on token 0: an attention sink\n", s.layer, s.head,
                   100 * s.value);
    if (figures_dir.empty()) return;
    // the three heads' weights over the 80 tokens, drawn side by side
    std::vector<figure::HeatmapPanel> panels;
    for (const auto& [sc, role] : {std::pair{p, "previous-token"}, std::pair{ind, "induction"}, std::pair{s, "sink"}}) {
        const std::vector<float> w = session.attention_weights(sc.layer);  // (H, N, N)
        figure::Grid grid{N, N, std::vector<float>(w.begin() + sc.head * N * N, w.begin() + (sc.head + 1) * N * N)};
        panels.push_back({fmt::format("L{}H{}, {} ({:.2f})", sc.layer, sc.head, role, sc.value), std::move(grid)});
    }
    const auto path = figure::save(
        figure::heatmaps(
            fmt::format("SmolLM2-135M on {} random tokens repeated: three of its heads", L), panels,
            fmt::format("rows: queries, columns: keys (tokens 0-{}, the repeat starts at {}); white = 0, dark blue = 1",
                        N - 1, L),
            4),
        figures_dir, "12_heads.png");
    fmt::print("  drew {}\n", path.string());
}

// Seconds a decode step takes on `session` (the median of `tokens` steps after two to warm up).
double decode_seconds(llama::Session& session, std::span<const std::int32_t> prompt, std::size_t tokens) {
    std::vector<float> logits;
    greedy(session, prompt, 2, logits);  // pages touched, threads up
    std::vector<double> times;
    std::int32_t id = static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    for (std::size_t t = 0; t < tokens; ++t) {
        const auto start = clock_type::now();
        session.forward(std::span(&id, 1), logits.data());
        times.push_back(seconds_since(start));
        id = static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

void step8_memory_bound(const Tracer& trace, const llama::Model& model, std::size_t decode_tokens) {
    trace.section("step 8: why decode is bound by memory -- the fast path rung by rung, against the read rate");
    const std::uint64_t bytes = model.bytes_per_token();
    double weights = double(model.embedding().count());  // the output matrix: every row, every token
    for (const llama::Block& b : model.blocks())
        for (const gguf::TensorInfo* t : {b.w_q, b.w_k, b.w_v, b.w_o, b.w_gate, b.w_up, b.w_down})
            weights += double(t->count());
    const double flops = 2.0 * weights;  // a multiply and an add per weight
    fmt::print(
        "  a decode step reads every weight once: {:.1f} MB in their blocks (4.5-8.5 bits a weight), {:.1f} MB as "
        "float32, for ~{:.2f} GFLOP: {:.1f} FLOPs a byte of blocks\n",
        double(bytes) / 1e6, 4.0 * weights / 1e6, flops / 1e9, flops / double(bytes));
    const double rate = fast::read_rate(512u << 20);
    fmt::print("  this machine reads {:.1f} GB/s (512 MiB streamed by every core the decoder uses)\n", rate);

    // Each rung checked against the exact path on the prompt's logits before it is timed.
    const std::vector<std::int32_t> prompt = model.tokenizer().encode("Once upon a time");
    const std::size_t V = model.config().vocab, capacity = prompt.size() + decode_tokens + 3;
    std::vector<float> exact(V);
    llama::Session(model, llama::Path::exact, capacity).forward(prompt, exact.data());
    struct Rung {
        std::string name;
        llama::Path path;
        quant::Isa isa;
        std::size_t threads;  // 0: all
    };
    const quant::Isa best = quant::active_isa();
    const std::vector<Rung> rungs = {
        {"float32 weights, BLAS, 1 thread", llama::Path::exact, best, 1},
        {"blocks, plain C++, 1 thread", llama::Path::fast, quant::Isa::scalar, 1},
        {"blocks, AVX2, 1 thread", llama::Path::fast, quant::Isa::avx2, 1},
        {"blocks, AVX-512 VNNI, 1 thread", llama::Path::fast, quant::Isa::avx512, 1},
        {fmt::format("blocks, {}, every thread", quant::to_string(best)), llama::Path::fast, best, 0}};
    fmt::print("  {:<34} {:>15} {:>7} {:>10} {:>13} {:>12}\n", "rung", "max|diff| exact", "argmax", "ms/token",
               "MB read/token", "% of bound");
    for (const Rung& r : rungs) {
        if (!quant::cpu_has(r.isa)) {
            fmt::print("  {:<34} (this CPU has no {})\n", r.name, quant::to_string(r.isa));
            continue;
        }
        quant::set_isa(r.isa);
        llama::Session session(model, r.path, capacity, r.threads);
        std::vector<float> logits(V);
        session.forward(prompt, logits.data());
        double diff = 0.0;
        for (std::size_t i = 0; i < V; ++i) diff = std::max(diff, double(std::fabs(logits[i] - exact[i])));
        const bool same = std::max_element(logits.begin(), logits.end()) - logits.begin() ==
                          std::max_element(exact.begin(), exact.end()) - exact.begin();
        session.clear();
        const double seconds = decode_seconds(session, prompt, decode_tokens);
        const double read = r.path == llama::Path::exact ? 4.0 * weights : double(bytes);
        fmt::print("  {:<34} {:>15.2e} {:>7} {:>10.2f} {:>13.1f} {:>11.0f}%\n", r.name, diff, same ? "same" : "differs",
                   seconds * 1e3, read / 1e6, 100.0 * read / seconds / (rate * 1e9));
    }
    quant::set_isa(best);
    trace.note(fmt::format(
        "Times: this machine's, the median of {} greedy steps. Every rung multiplies the same ~{:.2f} GFLOP; what "
        "changes is the bytes each token must bring in from memory and how close to the read rate the code "
        "brings them. Each weight arrives, is used once and is gone: prefill, where it is used by every token of "
        "the prompt, runs many times more tokens a second.",
        decode_tokens, flops / 1e9));
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 12: a real decoder writes -- SmolLM2-135M-Instruct through the course's own attention",
                    "12_decoder"};
    cli::LessonOptions opt;
    opt.seed = 1;
    std::size_t decode_tokens = 16, repeat = 40;
    std::string figures_dir;
    cli::add_lesson_options(app, opt, "seed");
    lesson::add_bounded_option(app, "--decode-tokens", decode_tokens, "tokens timed per rung in step 8", 4, 512);
    lesson::add_bounded_option(app, "--repeat", repeat, "random tokens in each copy of step 7's repeated sequence", 8,
                               500);
    lesson::add_save_figures(app, figures_dir, "three of the model's heads as heat maps (PNG and SVG)");
    return lesson::run(app, argc, argv, [&] {
        const Tracer trace(!opt.quiet);
        const llama::Model model = llama::Model::open(llama::default_model_path());
        fmt::print("Lesson 12: a real decoder writes   SmolLM2-135M-Instruct, {}\n",
                   llama::default_model_path().string());
        const std::vector<std::int32_t> sentence =
            model.tokenizer().encode("The quick brown fox jumps over the lazy dog");
        llama::Session session(model, llama::Path::exact, 64);
        step1_the_file(trace, model);
        step2_one_block_by_hand(trace, model);
        step3_tokens(trace, model);
        step4_one_block(trace, model, sentence, session);
        step5_cache(trace, model, sentence);
        step6_write(trace, model, opt.seed);
        step7_heads(trace, model, repeat, opt.seed, figures_dir);
        step8_memory_bound(trace, model, decode_tokens);
        return 0;
    });
}
