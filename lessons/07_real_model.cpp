// Lesson 07 -- the heads of a real trained model.
//
// Lessons 01-06 ran attention on random weights, so their heat maps showed noise. This lesson
// loads a model people use -- all-MiniLM-L6-v2, a 6-layer BERT encoder (d_model 384, 12 heads of
// 32, Apache-2.0) trained to turn sentences into vectors -- and runs it through the course's own
// attention (headwise::MultiHeadAttention, with a key padding mask for batches). Its forward pass:
//
//     x = LayerNorm(word[id] + position[i] + token_type[0])                        (B, N, d_model)
//     6 times:  x = LayerNorm(x + MultiHead(x))
//               x = LayerNorm(x + GELU(x W_1^T + b_1) W_2^T + b_2)                 (post-LN, as BERT)
//     sentence = mean of x over the real tokens, divided by its length            (B, d_model)
//
// Then it measures what the trained heads do -- every role below is computed from the attention
// weights, none is looked up: previous- and next-token heads, heads that park their attention on
// [CLS] or [SEP], where the pronoun "it" looks, how sharp or broad each head is, and which heads
// the sentence embedding cannot do without (head ablation). The weights come from
// scripts/fetch-model (run by ./headwise run all); the tests check every layer against Hugging Face
// transformers (tests/bert_test.cpp).
//
// Dimension letters: B = sentences in a batch, N = tokens, H = 12 heads, L = 6 layers,
// d_head = 32, d_ffn = 1536.
// Run:  ./headwise run 7      or      build/lessons/07_real_model --help

#include "headwise/model/bert.hpp"
#include "headwise/io/figure.hpp"
#include "headwise/io/head_view.hpp"
#include "headwise/model/head_roles.hpp"
#include "headwise/io/heatmap.hpp"
#include "headwise/lesson/lesson.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <span>

using namespace headwise;

namespace {

// One sentence, two endings: what was "too tired" is the dog, what was "too tall" is the fence.
const std::string tired = "The dog could not jump the fence because it was too tired.";
const std::string tall = "The dog could not jump the fence because it was too tall.";

// One head's weights for sentence b: (N, N).
Tensor2 head_weights(const std::vector<Tensor4>& attention, std::size_t layer, std::size_t b, std::size_t h) {
    return xt::view(attention[layer], b, h);
}

// The position of the first token equal to `word`, or N if there is none.
std::size_t find_token(const std::vector<std::string>& tokens, const std::string& word) {
    return static_cast<std::size_t>(std::find(tokens.begin(), tokens.end(), word) - tokens.begin());
}

struct Ranked {
    std::size_t layer, head;
    double value;
};

// Every (layer, head) scored by `score`, best first.
template <class F>
std::vector<Ranked> rank_heads(std::size_t L, std::size_t H, F score) {
    std::vector<Ranked> r;
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t h = 0; h < H; ++h) r.push_back({l, h, score(l, h)});
    std::stable_sort(r.begin(), r.end(), [](const Ranked& a, const Ranked& b) { return a.value > b.value; });
    return r;
}

std::string head_name(std::size_t l, std::size_t h) { return fmt::format("L{}H{}", l, h); }

// What forward keeps for the steps that read every layer: each layer's attention and hidden state.
bert::ForwardOptions keep_all() {
    bert::ForwardOptions keep;
    keep.keep_attention = keep.keep_hidden = true;
    return keep;
}

// ---------------------------------------------------------------------------------------------
// The steps, in the order the lesson tells them.

bert::Model step1_weights(const Tracer& trace, const std::filesystem::path& dir, std::size_t show_layer) {
    trace.section("step 1: the weights -- one safetensors file, mapped into memory");
    // A .safetensors file is 8 bytes of header length, a JSON header (name -> dtype, shape,
    // byte range) and the raw float32 data. Mapping it costs nothing; copying the 101 tensors
    // the encoder uses into tensors costs one pass over 91 MB.
    const auto t0 = std::chrono::steady_clock::now();
    const bert::Model model = bert::Model::load(dir);
    const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const safetensors::File file = safetensors::File::open(dir / "model.safetensors");
    const bert::Config& c = model.config;
    const std::size_t L = c.layers, H = c.heads, d = c.d_model, dh = c.d_head();
    std::size_t params = 0;
    for (const auto& t : file.tensors())
        if (t.dtype == safetensors::DType::f32) params += t.count();
    fmt::print("  {}: {} tensors, {:.1f} M float32 parameters, loaded in {:.0f} ms\n", dir.string(),
               file.tensors().size(), static_cast<double>(params) / 1e6, load_ms);
    fmt::print(
        "  config: {} layers, d_model {}, {} heads of d_head {}, d_ffn {}, {} positions, vocabulary {}, "
        "LayerNorm eps {:g}\n",
        L, d, H, dh, c.d_ffn, c.max_positions, c.vocab_size, c.layer_norm_eps);
    trace("word_embeddings", model.word_embeddings, "vocab, d_model");
    trace("position_embeddings", model.position_embeddings, "positions, d_model");
    trace("token_type_embeddings", model.token_type_embeddings, "types, d_model");
    const bert::Layer& layer = model.layers[show_layer];
    trace.shape_line("query.weight = w_q",
                     file.info(fmt::format("encoder.layer.{}.attention.self.query.weight", show_layer)).shape,
                     "d_model, d_model");
    trace("in_proj_weight", layer.attention.in_proj_weight, "3*d_model, d_model");
    trace("intermediate.dense = w_1", layer.w_1, "d_ffn, d_model");
    trace("output.dense = w_2", layer.w_2, "d_model, d_ffn");
    fmt::print(
        "  the three (d_model, d_model) matrices query, key, value are stacked as rows [W_q; W_k; W_v]:\n"
        "  exactly torch.nn.MultiheadAttention's in_proj_weight, so the library's attention runs them as they "
        "are.\n");
    return model;
}

// The sentence as tokens and as a batch of one: ids (1, N), padding (1, N).
struct Encoded {
    std::vector<std::string> tokens;
    bert::Batch batch;
};

Encoded step2_tokens(const Tracer& trace, const bert::Model& model, const std::string& sentence) {
    trace.section("step 2: text -> tokens -> ids (WordPiece)");
    const bert::Config& c = model.config;
    // BERT's basic tokenizer lower-cases, strips accents and splits off punctuation; WordPiece
    // then cuts each word into the longest vocabulary pieces, continuations marked "##".
    const WordPiece& vocab = model.vocab;
    const WordPiece::Encoding enc = vocab.encode(sentence, c.max_positions);
    fmt::print("  \"{}\"\n", sentence);
    fmt::print("  words: {}\n", fmt::join(vocab.basic_tokenize(sentence), " | "));
    fmt::print("  {:>4}  {:<14} {:>6}\n", "pos", "token", "id");
    for (std::size_t i = 0; i < enc.tokens.size(); ++i)
        fmt::print("  {:>4}  {:<14} {:>6}\n", i, enc.tokens[i], enc.ids[i]);
    for (const std::string example :
         {"Tokenization of unbelievably long words", "Café crème brûlée", "I ♥ 🙂 東京"}) {
        const auto e = vocab.encode(example);
        fmt::print("  \"{}\" -> {}\n", example, fmt::join(e.tokens, " "));
    }
    return {enc.tokens, bert::make_batch({enc.ids}, vocab.pad_id())};
}

Tensor3 step3_embeddings(const Tracer& trace, const bert::Model& model, const bert::Batch& batch) {
    trace.section("step 3: embeddings -- word + position + token type, then LayerNorm");
    const Tensor3 x = bert::embed(model, batch);  // (1, N, d_model)
    trace("x = LN(word + pos + type)", x, "B, N, d_model");
    return x;
}

// Returns layer show_layer's output y (1, N, d_model), computed step by step.
Tensor3 step4_one_layer(const Tracer& trace, const bert::Model& model, std::size_t show_layer, const Tensor3& x,
                        const bert::Batch& batch) {
    trace.section(fmt::format("step 4: layer {}, step by step, with the library's pieces", show_layer));
    const bert::Config& c = model.config;
    const std::size_t H = c.heads, d = c.d_model;
    const bert::Layer& layer = model.layers[show_layer];
    const MultiHeadAttention& mha = layer.attention;
    const Tensor2 w_q = xt::view(mha.in_proj_weight, xt::range(0, d), xt::all());          // (d_model, d_model)
    const Tensor2 w_k = xt::view(mha.in_proj_weight, xt::range(d, 2 * d), xt::all());      // (d_model, d_model)
    const Tensor2 w_v = xt::view(mha.in_proj_weight, xt::range(2 * d, 3 * d), xt::all());  // (d_model, d_model)
    const Tensor1 b_q = xt::view(mha.in_proj_bias, xt::range(0, d));                       // (d_model)
    const Tensor1 b_k = xt::view(mha.in_proj_bias, xt::range(d, 2 * d));                   // (d_model)
    const Tensor1 b_v = xt::view(mha.in_proj_bias, xt::range(2 * d, 3 * d));               // (d_model)
    const Tensor3 q = linear(x, w_q, b_q);                                                 // (1, N, d_model)
    const Tensor3 k = linear(x, w_k, b_k);                                                 // (1, N, d_model)
    const Tensor3 v = linear(x, w_v, b_v);                                                 // (1, N, d_model)
    trace("q = x . w_q^T + b_q", q, "B, N, d_model");
    trace("k = x . w_k^T + b_k", k, "B, N, d_model");
    trace("v = x . w_v^T + b_v", v, "B, N, d_model");
    const Tensor4 q_h = split_heads(q, H);  // (1, H, N, d_head)
    const Tensor4 k_h = split_heads(k, H);  // (1, H, N, d_head)
    const Tensor4 v_h = split_heads(v, H);  // (1, H, N, d_head)
    trace("q_h = split_heads(q)", q_h, "B, H, N, d_head");
    AttentionOptions masked;
    masked.key_padding_mask = &batch.padding;  // (1, N): all false here; padding in step 10's batch
    Tensor4 weights;                           // (1, H, N, N)
    const Tensor4 heads_out = scaled_dot_product_attention(q_h, k_h, v_h, masked, &weights);  // (1, H, N, d_head)
    trace("weights = softmax(qk^T/sqrt(32))", weights, "B, H, N_query, N_key");
    trace("heads_out = weights . v_h", heads_out, "B, H, N, d_head");
    const Tensor3 concat = merge_heads(heads_out);  // (1, N, d_model)
    trace("concat = merge_heads", concat, "B, N, d_model");
    const Tensor3 attn = linear(concat, mha.out_proj_weight, mha.out_proj_bias);  // (1, N, d_model)
    trace("attn = concat . w_o^T + b_o", attn, "B, N, d_model");
    const Tensor3 h1 =
        bert::layer_norm(x + attn, layer.ln1_gamma, layer.ln1_beta, c.layer_norm_eps);  // (1, N, d_model)
    trace("h = LN(x + attn)", h1, "B, N, d_model");
    // The feed-forward block: up to d_ffn, GELU, back down to d_model.
    const Tensor3 up = linear(h1, layer.w_1, layer.b_1);     // (1, N, d_ffn)
    const Tensor3 act = bert::gelu(up);                      // (1, N, d_ffn)
    const Tensor3 down = linear(act, layer.w_2, layer.b_2);  // (1, N, d_model)
    trace("up = h . w_1^T + b_1", up, "B, N, d_ffn");
    trace("gelu(up)", act, "B, N, d_ffn");
    trace("ffn = gelu(up) . w_2^T + b_2", down, "B, N, d_model");
    const Tensor3 y =
        bert::layer_norm(h1 + down, layer.ln2_gamma, layer.ln2_beta, c.layer_norm_eps);  // (1, N, d_model)
    trace("y = LN(h + ffn)", y, "B, N, d_model");
    const Tensor3 y_library = bert::encoder_layer(layer, x, batch.padding, c.layer_norm_eps);  // (1, N, d_model)
    fmt::print("  step by step vs bert::encoder_layer (MultiHeadAttention::forward inside): max |diff| = {:.2e}\n",
               max_abs_diff(y, y_library));
    fmt::print(
        "  BERT normalises after each residual sum (post-LN): LN(x + attn), then LN(h + ffn). GPT-2 and most\n"
        "  later models normalise before each block instead (pre-LN): x + attn(LN(x)).\n");
    return y;
}

// Every layer's attention (1, H, N, N) and hidden state, and the sentence embedding (1, d_model).
bert::Outputs step5_all_layers(const Tracer& trace, const bert::Model& model, const bert::Batch& batch,
                               std::size_t show_layer, const Tensor3& y) {
    trace.section("step 5: all six layers, then one vector for the sentence");
    const std::size_t N = batch.seq();
    const bert::Outputs out = bert::forward(model, batch, keep_all());
    trace("attention[l], l = 0..5", out.attention[0], "B, H, N_query, N_key");
    trace("last hidden state", out.last, "B, N, d_model");
    trace("sentence embedding", out.embedding, "B, d_model");
    fmt::print("  layer {} of the full pass equals step 4: max |diff| = {:.2e}\n", show_layer,
               max_abs_diff(out.hidden[show_layer + 1], y));
    fmt::print("  |embedding| = {:.6f} (mean over the {} tokens, then divided by its length)\n",
               std::sqrt(xt::sum(out.embedding * out.embedding)()), N);
    return out;
}

void step6_neighbour_heads(const Tracer& trace, const bert::Outputs& out, std::size_t L, std::size_t H, std::size_t N) {
    trace.section("step 6: previous-token and next-token heads");
    // For each head: the mean weight that token i puts on token i-1 (or i+1). Uniform
    // attention would give 1/N; a head that only ever looks one step back gives 1.
    auto prev = [&](std::size_t l, std::size_t h) {
        return roles::previous_token(head_weights(out.attention, l, 0, h), N);
    };
    auto next = [&](std::size_t l, std::size_t h) {
        return roles::next_token(head_weights(out.attention, l, 0, h), N);
    };
    fmt::print("  uniform attention would put 1/N = {:.3f} on each neighbour\n", 1.0 / static_cast<double>(N));
    fmt::print("  {:<7} {:>22} {:>22}\n", "layer", "best previous-token", "best next-token");
    for (std::size_t l = 0; l < L; ++l) {
        const auto p = rank_heads(1, H, [&](std::size_t, std::size_t h) { return prev(l, h); })[0];
        const auto n = rank_heads(1, H, [&](std::size_t, std::size_t h) { return next(l, h); })[0];
        fmt::print("  {:<7} {:>13} = {:.3f} {:>13} = {:.3f}\n", l, fmt::format("head {}", p.head), p.value,
                   fmt::format("head {}", n.head), n.value);
    }
    const auto prev_ranked = rank_heads(L, H, prev);
    const auto next_ranked = rank_heads(L, H, next);
    const std::size_t prev_heads =
        std::count_if(prev_ranked.begin(), prev_ranked.end(), [](const Ranked& r) { return r.value > 0.5; });
    const std::size_t next_heads =
        std::count_if(next_ranked.begin(), next_ranked.end(), [](const Ranked& r) { return r.value > 0.5; });
    fmt::print("  strongest previous-token head: {} ({:.3f}); {} of {} heads put > 0.5 on the previous token\n",
               head_name(prev_ranked[0].layer, prev_ranked[0].head), prev_ranked[0].value, prev_heads, L * H);
    fmt::print("  strongest next-token head:     {} ({:.3f}); {} of {} heads put > 0.5 on the next token\n",
               head_name(next_ranked[0].layer, next_ranked[0].head), next_ranked[0].value, next_heads, L * H);
}

// Each layer's mean share of attention on [CLS] and on [SEP] (L each).
struct Sink {
    std::vector<double> cls_by_layer, sep_by_layer;
};

Sink step7_attention_sink(const Tracer& trace, const bert::Outputs& out, std::size_t L, std::size_t H, std::size_t N) {
    trace.section("step 7: the attention sink -- [CLS] and [SEP]");
    // The share of a head's attention that lands on [CLS] (position 0) or [SEP] (position N-1).
    // Clark et al. (2019) found BERT-base parks much of its attention on [SEP]; measure it here.
    fmt::print("  {:<7} {:>12} {:>12} {:>16} {:>16}\n", "layer", "on [CLS]", "on [SEP]", "heads > 60% CLS",
               "heads > 60% SEP");
    std::size_t cls_total = 0, sep_total = 0;
    double cls_mean = 0.0, sep_mean = 0.0;
    std::vector<double> cls_by_layer(L), sep_by_layer(L);
    for (std::size_t l = 0; l < L; ++l) {
        double cls = 0.0, sep = 0.0;
        std::size_t cls_heads = 0, sep_heads = 0;
        for (std::size_t h = 0; h < H; ++h) {
            const Tensor2 w = head_weights(out.attention, l, 0, h);
            const double on_cls = roles::share_on(w, N, 0), on_sep = roles::share_on(w, N, N - 1);
            cls += on_cls / static_cast<double>(H);
            sep += on_sep / static_cast<double>(H);
            cls_heads += on_cls > 0.6;
            sep_heads += on_sep > 0.6;
        }
        cls_by_layer[l] = cls;
        sep_by_layer[l] = sep;
        cls_total += cls_heads;
        sep_total += sep_heads;
        cls_mean += cls / static_cast<double>(L);
        sep_mean += sep / static_cast<double>(L);
        fmt::print("  {:<7} {:>11.1f}% {:>11.1f}% {:>16} {:>16}\n", l, 100.0 * cls, 100.0 * sep, cls_heads, sep_heads);
    }
    fmt::print(
        "  all layers: {:.1f}% of the attention on [CLS], {:.1f}% on [SEP] (each is 1 of {} tokens = {:.1f}%);\n"
        "  {} heads put > 60% on [CLS], {} on [SEP]\n",
        100.0 * cls_mean, 100.0 * sep_mean, N, 100.0 / static_cast<double>(N), cls_total, sep_total);
    fmt::print("  {}\n",
               cls_mean > sep_mean
                   ? "in this model [CLS] is the sink: it plays the part Clark et al. found [SEP] playing in BERT-base"
                   : "in this model [SEP] is the sink, as Clark et al. found in BERT-base");
    return {cls_by_layer, sep_by_layer};
}

void step8_where_it_looks(const Tracer& trace, const bert::Model& model) {
    trace.section("step 8: where does \"it\" look?");
    const std::size_t L = model.config.layers, H = model.config.heads;
    const WordPiece& vocab = model.vocab;
    // Run the two sentences (a Winograd pair) and read the row of "it" in every head.
    const bert::Batch pair = bert::tokenize(model, {tired, tall});  // (2, 15): same length, no padding
    const bert::Outputs pair_out = bert::forward(model, pair, keep_all());
    const auto pair_tokens = vocab.encode(tired).tokens;
    const std::size_t it = find_token(pair_tokens, "it"), dog = find_token(pair_tokens, "dog"),
                      fence = find_token(pair_tokens, "fence");
    auto on = [&](std::size_t b, std::size_t l, std::size_t h, std::size_t key) {
        return static_cast<double>(pair_out.attention[l](b, h, it, key));
    };
    const auto it_ranked = rank_heads(L, H, [&](std::size_t l, std::size_t h) { return on(0, l, h, dog); });
    fmt::print("  the heads where \"it\" (position {}) puts the most weight on \"dog\" (position {}):\n", it, dog);
    fmt::print("    {:<7} {:>24} {:>24}\n", "head", "\"...too tired.\" dog", "\"...too tall.\" dog");
    fmt::print("    {:<7} {:>24} {:>24}\n", "", "(fence)", "(fence)");
    std::vector<std::string> moved, stayed;  // with "tall": heads now on "fence", heads still on "dog"
    for (std::size_t r = 0; r < 4; ++r) {
        const Ranked& h = it_ranked[r];
        fmt::print("    {:<7} {:>15.3f} ({:.3f}) {:>15.3f} ({:.3f})\n", head_name(h.layer, h.head),
                   on(0, h.layer, h.head, dog), on(0, h.layer, h.head, fence), on(1, h.layer, h.head, dog),
                   on(1, h.layer, h.head, fence));
        const bool to_fence = on(1, h.layer, h.head, fence) > on(1, h.layer, h.head, dog);
        (to_fence ? moved : stayed).push_back(head_name(h.layer, h.head));
    }
    fmt::print(
        "  with \"tall\" the fence is what was too tall.\n"
        "  heads that move to \"fence\": {}; heads that stay on \"dog\": {}.\n"
        "  A head that moves reads the adjective; one that stays links the pronoun to the subject, whatever "
        "follows.\n",
        moved.empty() ? "none" : fmt::format("{}", fmt::join(moved, ", ")),
        stayed.empty() ? "none" : fmt::format("{}", fmt::join(stayed, ", ")));
}

void step9_entropy(const Tracer& trace, const bert::Outputs& out, std::size_t L, std::size_t H, std::size_t show_layer,
                   const std::vector<std::string>& tokens) {
    trace.section(fmt::format("step 9: broad and sharp heads -- entropy, and layer {} drawn", show_layer));
    const std::size_t N = tokens.size();
    // Entropy of each query's row, averaged: 0 = every query looks at one token, ln N = evenly.
    const double ln_n = std::log(static_cast<double>(N));
    fmt::print("  mean entropy per head in nats (0 = one key, ln {} = {:.2f} = uniform):\n", N, ln_n);
    fmt::print("  {:<7}", "layer");
    for (std::size_t h = 0; h < H; ++h) fmt::print(" {:>5}", fmt::format("h{}", h));
    fmt::print("\n");
    std::vector<double> layer_entropy(H);
    for (std::size_t l = 0; l < L; ++l) {
        fmt::print("  {:<7}", l);
        for (std::size_t h = 0; h < H; ++h) {
            const double e = roles::mean_entropy(head_weights(out.attention, l, 0, h), N);
            if (l == show_layer) layer_entropy[h] = e;
            fmt::print(" {:>5.2f}", e);
        }
        fmt::print("\n");
    }
    const auto sharp = std::min_element(layer_entropy.begin(), layer_entropy.end()) - layer_entropy.begin();
    const auto broad = std::max_element(layer_entropy.begin(), layer_entropy.end()) - layer_entropy.begin();
    fmt::print("  layer {}: sharpest head {} ({:.2f}), broadest head {} ({:.2f}); rows are queries, columns keys; {}\n",
               show_layer, sharp, layer_entropy[sharp], broad, layer_entropy[broad], heatmap_legend(trace.colored()));
    HeatmapOptions look;
    look.color = trace.colored();
    look.max_size = 20;
    for (std::size_t h : {static_cast<std::size_t>(sharp), static_cast<std::size_t>(broad)}) {
        fmt::print("\n  layer {} head {}   entropy {:.2f}\n", show_layer, h, layer_entropy[h]);
        lesson::print_indented(heatmap(head_weights(out.attention, show_layer, 0, h), tokens, tokens, look));
    }
}

// Every head ranked by how much removing it moves the sentence embedding, most first.
std::vector<Ranked> step10_ablation(const Tracer& trace, const bert::Model& model, std::size_t top) {
    trace.section("step 10: head ablation -- remove one head at a time");
    const std::size_t L = model.config.layers, H = model.config.heads, d = model.config.d_model;
    // Zero head h's 32 columns of W_O (its output never reaches the residual stream) and compare
    // the sentence embeddings with the intact model's, for a padded batch of four sentences.
    const std::vector<std::string> texts = {tired, "A man is playing a guitar.", "The stock market fell sharply today.",
                                            "Tokenization of unbelievably long words."};
    const bert::Batch four = bert::tokenize(model, texts);  // (4, N_max), padded
    trace("four sentences, padded", four.padding, "B, N");
    const Tensor2 base = bert::forward(model, four).embedding;  // (4, d_model)
    auto ablated_cosine = [&](std::size_t l, std::size_t h) {
        bert::ForwardOptions cut;
        cut.ablate_layer = l;
        cut.ablate_head = h;
        const Tensor2 e = bert::forward(model, four, cut).embedding;  // (4, d_model)
        double s = 0.0;
        for (std::size_t b = 0; b < four.size(); ++b) s += bert::cosine(&e(b, 0), &base(b, 0), d);
        return s / static_cast<double>(four.size());
    };
    auto ablation = rank_heads(L, H, [&](std::size_t l, std::size_t h) { return 1.0 - ablated_cosine(l, h); });
    const std::size_t harmless =
        std::count_if(ablation.begin(), ablation.end(), [](const Ranked& r) { return r.value < 0.01; });
    fmt::print("  {} of {} heads can go with the embedding's cosine to the original still > 0.99\n", harmless, L * H);
    fmt::print("  the heads that matter most (1 - cosine, mean over the 4 sentences):\n");
    for (std::size_t r = 0; r < std::min(top, ablation.size()); ++r) {
        fmt::print("    {:<6} {:.4f}\n", head_name(ablation[r].layer, ablation[r].head), ablation[r].value);
    }
    fmt::print("  median head: {:.4f}; least important: {} {:.5f}\n", ablation[ablation.size() / 2].value,
               head_name(ablation.back().layer, ablation.back().head), ablation.back().value);
    return ablation;
}

void step11_similarity(const Tracer& trace, const bert::Model& model) {
    trace.section("step 11: is it a real model? sentence similarity");
    const std::size_t d = model.config.d_model;
    const std::vector<std::pair<std::string, std::string>> pairs = {
        {"A man is playing a guitar.", "Someone is playing an instrument."},
        {"The cat sits on the mat.", "A kitten is resting on a rug."},
        {"A man is playing a guitar.", "The stock market fell sharply today."},
        {"The cat sits on the mat.", "Interest rates were raised again."},
    };
    for (const auto& [a, b] : pairs) {
        const Tensor2 e = bert::forward(model, bert::tokenize(model, {a, b})).embedding;  // (2, d_model)
        fmt::print("  {:>6.3f}  \"{}\" / \"{}\"\n", bert::cosine(&e(0, 0), &e(1, 0), d), a, b);
    }
    fmt::print("  paraphrases score high, unrelated pairs low: the weights are the trained ones.\n");
}

// Layer show_layer's heads, the sink and the ablation drawn, and the head view page, when
// --save-figures asks for them.
void figures_heads(const Tracer& trace, const bert::Outputs& out, std::size_t L, std::size_t H, std::size_t show_layer,
                   const std::vector<std::string>& tokens, const Sink& sink_share, const std::vector<Ranked>& ablation,
                   const std::string& sentence, const std::string& figures_dir) {
    if (figures_dir.empty()) return;
    trace.section("figures: layer heads, the [CLS]/[SEP] sink and head ablation");
    const std::size_t N = tokens.size();
    const auto& [cls_by_layer, sep_by_layer] = std::tie(sink_share.cls_by_layer, sink_share.sep_by_layer);
    for (std::size_t half = 0; half < 2; ++half) {  // six heads per picture, so each stays readable
        std::vector<figure::HeatmapPanel> panels;
        for (std::size_t h = half * H / 2; h < (half + 1) * H / 2; ++h) {
            panels.push_back({fmt::format("head {}", h), figure::grid_of(head_weights(out.attention, show_layer, 0, h)),
                              tokens, tokens});
        }
        figure::save(figure::heatmaps(fmt::format("all-MiniLM-L6-v2, layer {}, heads {}-{}", show_layer, half * H / 2,
                                                  (half + 1) * H / 2 - 1),
                                      panels, "rows: queries, columns: keys; white = 0, dark blue = 1", 14),
                     figures_dir, fmt::format("07_layer_heads_{}.png", half == 0 ? "a" : "b"));
    }
    figure::BarChart sink{"Share of attention on [CLS] and on [SEP], per layer", "share of attention"};
    for (std::size_t l = 0; l < L; ++l) {
        sink.bars.push_back({fmt::format("L{} CLS", l), cls_by_layer[l], figure::palette(0)});
        sink.bars.push_back({fmt::format("L{} SEP", l), sep_by_layer[l], figure::palette(1)});
    }
    sink.reference = 1.0 / static_cast<double>(N);
    sink.reference_label = fmt::format("uniform: 1/N = {:.3f}", 1.0 / static_cast<double>(N));
    sink.format = [](double v) { return fmt::format("{:.2f}", v); };
    figure::save(figure::bar_chart(sink), figures_dir, "07_cls_sep_sink.png");
    figure::BarChart bars{
        fmt::format("Head ablation: the 24 of {} heads whose removal moves the embedding most", L * H),
        "1 - cosine(without the head, original)"};
    for (const Ranked& r : std::span(ablation).first(24)) {
        bars.bars.push_back({head_name(r.layer, r.head), std::max(r.value, 1e-6), figure::palette(r.layer)});
    }
    bars.format = [](double v) { return fmt::format("{:.3f}", v); };
    figure::save(figure::bar_chart(bars), figures_dir, "07_head_ablation.png");

    // The same numbers to explore in a browser, one offline page (headwise/io/head_view.hpp):
    // every layer's weights as lines between the tokens, the 72 heads as a grid labelled with
    // their roles (steps 6, 7, 9), and step 10's ablation cosines as its colours.
    head_view::Data page;
    page.title = fmt::format("lesson 07: \"{}\"", sentence);
    page.subtitle = fmt::format(
        "all-MiniLM-L6-v2, {} layers x {} heads, through the course's forward pass "
        "(lessons/07_real_model.cpp, step 5)",
        L, H);
    page.tokens = tokens;
    page.ablation_label = "cosine of the embedding without that head to the full one (step 10, mean of 4)";
    page.roles.assign(L, std::vector<std::string>(H));
    page.ablation.assign(L, std::vector<double>(H));
    for (std::size_t l = 0; l < L; ++l) {
        page.weights.push_back(xt::view(out.attention[l], 0));  // (H, N, N)
        for (std::size_t h = 0; h < H; ++h) page.roles[l][h] = roles::role(head_weights(out.attention, l, 0, h), N);
    }
    for (const Ranked& r : ablation) page.ablation[r.layer][r.head] = 1.0 - r.value;
    const std::filesystem::path html = std::filesystem::path(figures_dir) / "07_heads.html";
    head_view::write(html, page);
    fmt::print("  page: {} -- open it in a browser (head view, model view, ablation view)\n", html.string());
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 07: the heads of a real trained model (all-MiniLM-L6-v2)", "07_real_model"};
    std::string sentence = tired;
    std::size_t show_layer = 0;
    std::size_t top = 5;
    std::string figures_dir;
    bool quiet = false;
    app.add_flag("--quiet", quiet, "no shape lines (the numbers and tables are still printed)");
    app.add_option("--sentence", sentence, "the sentence whose tokens, layer and heads are shown")
        ->capture_default_str();
    lesson::add_bounded_option(app, "--layer", show_layer,
                               "the layer computed step by step and drawn head by head (0-5)", 0, 5);
    lesson::add_bounded_option(app, "--top", top, "how many of the heads that matter most step 10 names (1-72)", 1, 72);
    lesson::add_save_figures(app, figures_dir, "this lesson's pictures (PNG) and its head view page (07_heads.html)");
    return lesson::run(app, argc, argv, [&] {
        const auto dir = bert::model_dir();
        bert::require_model(dir);  // without the model: one line on stderr that says how to get it, exit 2
        const Tracer trace(!quiet);
        fmt::print("Lesson 07: the heads of a real trained model (all-MiniLM-L6-v2)\n");
        const bert::Model model = step1_weights(trace, dir, show_layer);
        const std::size_t L = model.config.layers, H = model.config.heads;
        const Encoded enc = step2_tokens(trace, model, sentence);
        const std::size_t N = enc.batch.seq();
        const Tensor3 x = step3_embeddings(trace, model, enc.batch);                // (1, N, d_model)
        const Tensor3 y = step4_one_layer(trace, model, show_layer, x, enc.batch);  // (1, N, d_model)
        const bert::Outputs out = step5_all_layers(trace, model, enc.batch, show_layer, y);
        step6_neighbour_heads(trace, out, L, H, N);
        const Sink sink = step7_attention_sink(trace, out, L, H, N);
        step8_where_it_looks(trace, model);
        step9_entropy(trace, out, L, H, show_layer, enc.tokens);
        const std::vector<Ranked> ablation = step10_ablation(trace, model, top);
        step11_similarity(trace, model);
        figures_heads(trace, out, L, H, show_layer, enc.tokens, sink, ablation, sentence, figures_dir);
        return cli::exit_ok;
    });
}
