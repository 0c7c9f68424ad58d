// Lesson 08 -- attention at inference time: the KV cache, multi-query and grouped-query attention.
//
// Lessons 01-07 ran attention over a whole sequence at once. A decoder that writes text does
// something else: it reads a prompt once (the *prefill*), then produces one token at a time (the
// *decode*), and each new token needs attention over everything before it. Two ideas make that
// cheap, and every model in use today has both:
//
//   - the KV cache: token t's key and value never change once computed (the causal mask keeps them
//     from seeing later tokens), so they are kept, and each new token projects only itself and
//     attends with one (1, N + 1) row per head;
//   - sharing key/value heads: H query heads read only H_kv key/value heads (multi-query attention
//     when H_kv = 1, grouped-query attention in between), so the cache is H / H_kv times smaller.
//
// This file builds a cache step by step, proves that decoding with it gives exactly what the full
// causal forward gives, counts and times what it saves, then shares K/V heads and ends with the
// cache sizes of published models. Everything it computes lives in src/headwise/inference/kv_cache.hpp
// (the cache) and src/headwise/reference/layer.hpp (the grouped-query layer).
//
// Dimension letters: B = batch, N = tokens so far, H = query heads, H_kv = key/value heads,
// d_head = d_model / H, g = H / H_kv query heads per key/value head.
// Run:  ./headwise run 8      or      build/lessons/08_kv_cache --help

#include "headwise/reference/batched.hpp"
#include "headwise/io/figure.hpp"
#include "headwise/inference/kv_cache.hpp"
#include "headwise/lesson/lesson.hpp"
#include "headwise/reference/params.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

using namespace headwise;
using params::format_bytes;
using params::group_digits;

namespace {

// ---------------------------------------------------------------------------------------------
// Step helpers.

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// Tokens [from, to) of x (B, N, d_model).
Tensor3 tokens(const Tensor3& x, std::size_t from, std::size_t to) {
    return xt::view(x, xt::all(), xt::range(from, to), xt::all());
}

// Seconds for `run`, the median of `repeats` runs.
template <class F>
double median_seconds(int repeats, const F& run) {
    std::vector<double> s;
    for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        run();
        s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
}

// 1.2e9 -> "1.20 G"
std::string si(double x) {
    const char* units[] = {"", " k", " M", " G", " T", " P"};
    int u = 0;
    while (x >= 1000.0 && u < 5) {
        x /= 1000.0;
        ++u;
    }
    return fmt::format("{:.3g}{}", x, units[u]);
}

// Generates `steps` tokens after the prompt with the cache: prefill, then one decode_step each.
// The inputs are given (teacher forcing): there is no language-model head here to pick tokens.
Tensor3 generate_cached(const GroupedQueryAttention& m, const Tensor3& x, std::size_t prompt) {
    const std::size_t n = x.shape()[1];
    KVCache cache(x.shape()[0], m.kv_heads, m.d_head(), n);
    Tensor3 y = Tensor3::from_shape(x.shape());  // (B, N, d_model)
    xt::view(y, xt::all(), xt::range(0, prompt), xt::all()) = prefill(m, cache, tokens(x, 0, prompt));
    for (std::size_t t = prompt; t < n; ++t)
        xt::view(y, xt::all(), xt::range(t, t + 1), xt::all()) = decode_step(m, cache, tokens(x, t, t + 1));
    return y;
}

// The same tokens without a cache: the whole causal forward over tokens 0..t again for every t.
Tensor3 generate_recomputed(const GroupedQueryAttention& m, const Tensor3& x, std::size_t prompt) {
    const std::size_t n = x.shape()[1];
    AttentionOptions causal;
    causal.causal = true;
    Tensor3 y = Tensor3::from_shape(x.shape());  // (B, N, d_model)
    xt::view(y, xt::all(), xt::range(0, prompt), xt::all()) = m.forward(tokens(x, 0, prompt), causal);
    for (std::size_t t = prompt; t < n; ++t) {
        const Tensor3 all = m.forward(tokens(x, 0, t + 1), causal);  // (B, t + 1, d_model): only the last is new
        xt::view(y, xt::all(), xt::range(t, t + 1), xt::all()) = tokens(all, t, t + 1);
    }
    return y;
}

// The sizes every step reads: batch, prompt tokens, all tokens (prompt and generated), d_model,
// heads, d_head = d_model / H.
struct Sizes {
    std::size_t B, P, N, d, H, dh;
};

// ---------------------------------------------------------------------------------------------
// The steps, in the order the lesson tells them.

// The layer of lessons 03-05 (H_kv = H) for steps 1-5 and its input; weights scaled as in lesson 04
// so that the attention weights have some structure.
struct Layer {
    GroupedQueryAttention mha;  // in_proj (3 d_model, d_model)
    Tensor3 x;                  // (B, N, d_model): the prompt, then the tokens to decode
};

Layer the_layer(Random& rng, const Sizes& z) {
    GroupedQueryAttention mha = GroupedQueryAttention::random(z.d, z.H, z.H, /*bias=*/true, rng);
    mha.in_proj_weight *= std::sqrt(3.0f);             // (3 d_model, d_model)
    const Tensor3 x = rng.normal<3>({z.B, z.N, z.d});  // (B, N, d_model)
    return {mha, x};
}

// Returns the cache after the prompt: (B, H_kv, N_max, d_head), P positions filled.
KVCache step1_prefill(const Tracer& trace, const Sizes& z, const Layer& layer) {
    trace.section("step 1: prefill -- the prompt in one causal pass, its K and V kept");
    const auto [B, P, N, d, H, dh] = z;
    const auto& [mha, x] = std::tie(layer.mha, layer.x);
    const Tensor3 prompt = tokens(x, 0, P);  // (B, P, d_model)
    trace("prompt x", prompt, "B, N, d_model");
    const Tensor4 q_prompt = mha.project_q(prompt);  // (B, H, P, d_head)
    const Tensor4 k_prompt = mha.project_k(prompt);  // (B, H_kv, P, d_head), H_kv = H here
    const Tensor4 v_prompt = mha.project_v(prompt);  // (B, H_kv, P, d_head)
    trace("q", q_prompt, "B, H, N, d_head");
    trace("k", k_prompt, "B, H_kv, N, d_head");
    trace("v", v_prompt, "B, H_kv, N, d_head");
    KVCache cache(B, H, dh, N);  // room for every token: (B, H_kv, N_max, d_head) allocated once
    const Tensor3 y_prompt = prefill(mha, cache, prompt);  // (B, P, d_model), causal
    trace("prefill output", y_prompt, "B, N, d_model");
    trace("cache K", cache.keys(), "B, H_kv, N, d_head");
    trace("cache V", cache.values(), "B, H_kv, N, d_head");
    fmt::print("  the cache holds {} of {} positions; its K is the prompt's k: max |diff| = {:.1e}\n", cache.length(),
               cache.capacity(), max_abs_diff(cache.keys(), k_prompt));
    return cache;
}

// Token P through the library's decode_step (into `cache`) and by hand.
void step2_decode_one(const Tracer& trace, const Sizes& z, const Layer& layer, KVCache& cache) {
    trace.section(fmt::format("step 2: one decode step -- token {} projects only itself and attends with a (1, {}) row",
                              z.P, z.P + 1));
    const auto [B, P, N, d, H, dh] = z;
    const auto& [mha, x] = std::tie(layer.mha, layer.x);
    const Tensor3 x_new = tokens(x, P, P + 1);  // (B, 1, d_model)
    trace("x_new", x_new, "B, 1, d_model");
    const Tensor4 q_new = mha.project_q(x_new);  // (B, H, 1, d_head)
    const Tensor4 k_new = mha.project_k(x_new);  // (B, H_kv, 1, d_head)
    const Tensor4 v_new = mha.project_v(x_new);  // (B, H_kv, 1, d_head)
    trace("q_new", q_new, "B, H, 1, d_head");
    trace("k_new", k_new, "B, H_kv, 1, d_head");
    trace("v_new", v_new, "B, H_kv, 1, d_head");
    KVCache by_hand = cache;       // the same cache, stepped here by hand; `cache` goes on with the library
    by_hand.append(k_new, v_new);  // append FIRST: the new token must see itself
    const Tensor4 k_all = by_hand.keys(), v_all = by_hand.values();  // (B, H_kv, P + 1, d_head)
    trace("cache K after append", k_all, "B, H_kv, N+1, d_head");
    trace("cache V after append", v_all, "B, H_kv, N+1, d_head");
    const Tensor4 scores =
        attention_scores(q_new, k_all, 1.0f / std::sqrt(static_cast<float>(dh)));  // (B, H, 1, P + 1)
    trace("scores", scores, "B, H, 1, N+1");
    const Tensor4 weights = softmax(scores);  // (B, H, 1, P + 1)
    trace("weights", weights, "B, H, 1, N+1");
    const Tensor4 heads_new = apply_weights(weights, v_all);  // (B, H, 1, d_head)
    trace("weights . v", heads_new, "B, H, 1, d_head");
    const Tensor3 merged = merge_heads(heads_new);  // (B, 1, d_model)
    trace("heads merged", merged, "B, 1, d_model");
    const Tensor3 y_new = linear(merged, mha.out_proj_weight, mha.out_proj_bias);  // (B, 1, d_model)
    trace("y_new = merged . W_o^T", y_new, "B, 1, d_model");
    const Tensor3 y_lib = decode_step(mha, cache, x_new);  // (B, 1, d_model)
    fmt::print("  by hand vs headwise::decode_step: max |diff| = {:.1e}\n", max_abs_diff(y_new, y_lib));
    // Why no mask: in the full (N+1, N+1) causal mask the new token is the LAST row, and the last
    // row hides nothing -- every key in the cache is in its past.
    const Mask2 full_mask = causal_mask(P + 1);  // (N+1, N+1)
    std::size_t hidden_in_last_row = 0;
    for (std::size_t j = 0; j <= P; ++j) hidden_in_last_row += full_mask(P, j);
    fmt::print("  no mask needed: row {} of the ({}, {}) causal mask hides {} keys -- the cache holds only the past\n",
               P, P + 1, P + 1, hidden_in_last_row);
}

void step3_decode_all(const Tracer& trace, const Sizes& z, const Layer& layer, KVCache& cache, std::size_t generate) {
    trace.section(fmt::format("step 3: {} decode steps equal the full causal recompute", generate));
    const auto [B, P, N, d, H, dh] = z;
    const auto& [mha, x] = std::tie(layer.mha, layer.x);
    for (std::size_t t = P + 1; t < N; ++t) decode_step(mha, cache, tokens(x, t, t + 1));  // (B, 1, d_model) each
    trace("cache K", cache.keys(), "B, H_kv, N, d_head");
    const Tensor3 y_cached = generate_cached(mha, x, P);  // (B, N, d_model): prefill + decode steps
    AttentionOptions causal;
    causal.causal = true;
    const Tensor3 y_full = mha.forward(x, causal);  // (B, N, d_model): every token at once, causal mask
    trace("decoded outputs", y_cached, "B, N, d_model");
    trace("full causal forward", y_full, "B, N, d_model");
    const double decode_diff = max_abs_diff(y_cached, y_full);
    fmt::print("  prefill + {} decode steps vs one causal forward over all {} tokens: max |diff| = {:.2e} ({} 1e-6)\n",
               generate, N, decode_diff, decode_diff <= 1e-6 ? "<=" : ">");
}

void step4_cost_per_token(const Tracer& trace, Random& rng, const Sizes& z, const Layer& layer, std::size_t timed) {
    trace.section("step 4: the cost of one generated token, with and without the cache");
    const auto [B, P, N, d, H, dh] = z;
    const GroupedQueryAttention& mha = layer.mha;
    fmt::print(
        "  FLOPs for the token at position p (d_model = {}): with the cache, one token's projections\n"
        "  + 4 (p+1) d_model; without, the whole causal forward over p+1 tokens again\n",
        d);
    fmt::print("    {:>8} {:>14} {:>14} {:>10}\n", "p", "with cache", "recomputed", "ratio");
    for (std::size_t p : {std::size_t{0}, std::size_t{15}, std::size_t{127}, std::size_t{511}, std::size_t{4095}}) {
        const double with = decode_flops(d, H, H, p, true), without = decode_flops(d, H, H, p, false);
        fmt::print("    {:>8} {:>14} {:>14} {:>9.1f}x\n", p, si(with), si(without), without / with);
    }
    const Tensor3 long_x = rng.normal<3>({B, P + timed, d});  // (B, P + T, d_model)
    Tensor3 y_c, y_r;
    const double t_cached = median_seconds(3, [&] { y_c = generate_cached(mha, long_x, P); });
    const double t_recomputed = median_seconds(1, [&] { y_r = generate_recomputed(mha, long_x, P); });
    fmt::print(
        "  timed: {} tokens after a {}-token prompt, B = {}: cached {:.1f} ms ({:.0f} tokens/s), recomputed "
        "{:.1f} ms ({:.0f} tokens/s): {:.1f}x\n",
        timed, P, B, 1e3 * t_cached, double(timed) / t_cached, 1e3 * t_recomputed, double(timed) / t_recomputed,
        t_recomputed / t_cached);
    fmt::print("  (the two agree: max |diff| = {:.1e}; timings are this run's, on a shared machine)\n",
               max_abs_diff(y_c, y_r));
}

void step5_cache_growth(const Tracer& trace, const Sizes& z, const KVCache& cache) {
    trace.section("step 5: the cache grows with every token");
    const auto [B, P, N, d, H, dh] = z;
    fmt::print("  2 (K, V) x B x H_kv x N x d_head floats = 2 x {} x {} x N x {} x 4 bytes:\n", B, H, dh);
    fmt::print("    {:>8} {:>14} {:>14}\n", "N", "cache (fp32)", "per token");
    for (std::size_t n : {std::size_t{1}, P, N, std::size_t{1024}, std::size_t{32768}}) {
        const double bytes = 2.0 * double(B) * double(H) * double(n) * double(dh) * 4.0;
        fmt::print("    {:>8} {:>14} {:>14}\n", n, format_bytes(bytes), format_bytes(bytes / double(n)));
    }
    fmt::print("  this run's cache after {} tokens: {} (KVCache::bytes)\n", cache.length(),
               format_bytes(double(cache.bytes())));
}

void step6_grouped_query(const Tracer& trace, Random& rng, const Sizes& z, const Tensor3& x, std::size_t kv_heads) {
    trace.section(
        fmt::format("step 6: sharing K/V heads -- H = {} query heads, H_kv = {} key/value heads", z.H, kv_heads));
    const auto [B, P, N, d, H, dh] = z;
    AttentionOptions causal;
    causal.causal = true;
    const std::size_t g = H / kv_heads;
    GroupedQueryAttention gqa = GroupedQueryAttention::random(d, H, kv_heads, /*bias=*/true, rng);
    gqa.in_proj_weight *= std::sqrt(3.0f);
    trace("in_proj_weight", gqa.in_proj_weight, "H*d_head + 2*H_kv*d_head, d_model");
    fmt::print("  W_q ({}, {}) = H x d_head rows; W_k and W_v ({}, {}) each = H_kv x d_head rows\n", H * dh, d,
               kv_heads * dh, d);
    const Tensor4 q = gqa.project_q(x);  // (B, H, N, d_head)
    const Tensor4 k = gqa.project_k(x);  // (B, H_kv, N, d_head)
    const Tensor4 v = gqa.project_v(x);  // (B, H_kv, N, d_head)
    trace("q", q, "B, H, N, d_head");
    trace("k", k, "B, H_kv, N, d_head");
    trace("v", v, "B, H_kv, N, d_head");
    fmt::print("  query head h reads K/V head h / g, g = H / H_kv = {}:", g);
    for (std::size_t kvh = 0; kvh < std::min<std::size_t>(kv_heads, 8); ++kvh)
        fmt::print("  heads {}..{} -> {}", kvh * g, kvh * g + g - 1, kvh);
    fmt::print("{}\n", kv_heads > 8 ? " ..." : "");
    const Tensor4 k_repeated = repeat_kv(k, g);  // (B, H, N, d_head): what MHA would hold
    trace("k repeated per group", k_repeated, "B, H, N, d_head");
    const Tensor4 grouped = grouped_query_attention(q, k, v, causal);                               // (B, H, N, d_head)
    const Tensor4 repeated = scaled_dot_product_attention(q, k_repeated, repeat_kv(v, g), causal);  // (B, H, N, d_head)
    trace("grouped attention", grouped, "B, H, N, d_head");
    fmt::print("  grouped attention vs attention over K/V repeated per group: max |diff| = {:.1e}\n",
               max_abs_diff(grouped, repeated));
    const MultiHeadAttention as_mha = gqa.with_repeated_kv();  // in_proj (3 d_model, d_model)
    trace("MHA in_proj_weight", as_mha.in_proj_weight, "3*d_model, d_model");
    fmt::print("  GQA layer vs the MHA layer whose W_k, W_v rows are repeated per group: max |diff| = {:.1e}\n",
               max_abs_diff(gqa.forward(x, causal), as_mha.forward(x, causal)));
    fmt::print("  GQA decode with a (B, H_kv, N, d_head) cache vs its full causal recompute: max |diff| = {:.1e}\n",
               max_abs_diff(generate_cached(gqa, x, P), gqa.forward(x, causal)));

    fmt::print(
        "  what sharing saves (d_model = {}, H = {}; decode reads the whole cache once per token, here at N = "
        "{}):\n",
        d, H, 4096);
    fmt::print("    {:>5} {:>5} {:>12} {:>14} {:>16} {:>16}\n", "H_kv", "kind", "parameters", "cache / token",
               "K/V read / token", "vs MHA");
    for (std::size_t kvh = H; kvh >= 1; --kvh) {
        if (H % kvh != 0) continue;
        const double per_token = 2.0 * double(kvh) * double(dh) * 4.0;  // K and V, one layer, fp32
        fmt::print("    {:>5} {:>5} {:>12} {:>14} {:>16} {:>15.3g}x\n", kvh,
                   kvh == H   ? "MHA"
                   : kvh == 1 ? "MQA"
                              : "GQA",
                   group_digits(gqa_params(d, H, kvh, true)), format_bytes(per_token), format_bytes(per_token * 4096.0),
                   double(kvh) / double(H));
    }
}

void step7_published_models(const Tracer& trace) {
    trace.section("step 7: published models -- KV cache per token and per context, fp16");
    fmt::print(
        "  bytes per token = layers x H_kv x d_head x 2 (K, V) x 2 bytes; caches that fit count the cache\n"
        "  alone (the weights need their own memory); * = beyond the context the model was trained for\n");
    fmt::print("    {:<12} {:<4} {:>6} {:>4} {:>5} {:>6} {:>11} {:>11} {:>11} {:>11} {:>13} {:>13}\n", "model", "attn",
               "layers", "H", "H_kv", "d_head", "per token", "4k", "32k", "128k", "fit in 24 GiB", "fit in 80 GiB");
    const std::uint64_t contexts[] = {4096, 32768, 131072};
    for (const KvModel& m : kv_models()) {
        std::string cells, fit24, fit80;
        for (const std::uint64_t n : contexts) {
            const char* star = n > m.trained_context ? "*" : "";
            cells += fmt::format(" {:>11}", format_bytes(double(kv_cache_bytes(m, n))) + star);
            fit24 += fmt::format("{}{}", fit24.empty() ? "" : "/", caches_that_fit(m, n, std::uint64_t(24 * GiB)));
            fit80 += fmt::format("{}{}", fit80.empty() ? "" : "/", caches_that_fit(m, n, std::uint64_t(80 * GiB)));
        }
        fmt::print("    {:<12} {:<4} {:>6} {:>4} {:>5} {:>6} {:>11}{} {:>13} {:>13}\n", m.name, m.attention, m.layers,
                   m.heads, m.kv_heads, m.d_head, format_bytes(double(kv_bytes_per_token(m))), cells, fit24, fit80);
    }
    fmt::print(
        "  fit columns: whole caches at 4k/32k/128k tokens. Llama-3-8B with all 32 heads as K/V heads\n"
        "  would need {} per token, 4x its GQA cache.\n",
        format_bytes(double(kv_bytes_per_token({"", "MHA", 32, 4096, 32, 32, 128, 2, 8192}))));
}

// Cache memory against context length for MHA, GQA and MQA, when --save-figures asks for it.
void figure_cache_memory(const Tracer& trace, const std::string& figures_dir) {
    if (figures_dir.empty()) return;
    trace.section("figure: cache memory against context length, MHA vs GQA vs MQA of one model size");
    // Llama-3-8B's shape (32 layers, 32 query heads of 128) with 32, 8 and 1 K/V heads.
    const std::size_t variants[] = {32, 8, 1};
    const char* names[] = {"MHA, H_kv 32", "GQA, H_kv 8", "MQA, H_kv 1"};
    figure::LinePlot plot{"KV cache, 32 layers, H 32, d_head 128, fp16", "context length (tokens, one sequence)",
                          "cache bytes"};
    for (std::size_t i = 0; i < 3; ++i) {
        const KvModel m{"", "", 32, 4096, 32, variants[i], 128, 2, 8192};
        figure::Series s{names[i], {}, {}, figure::palette(i)};
        // 1,000 to 1,000,000 tokens: round contexts that fill the log axis's three decades.
        for (std::uint64_t n = 1000; n <= 1000000; n = n == 512000 ? 1000000 : 2 * n) {
            s.x.push_back(double(n));
            s.y.push_back(double(kv_cache_bytes(m, n)));
        }
        plot.series.push_back(std::move(s));
    }
    for (const double gib : {24.0, 80.0}) {
        plot.series.push_back({fmt::format("{:.0f} GiB", gib), {1000.0, 1e6}, {gib * GiB, gib * GiB}, figure::grey});
    }
    plot.format_y = [](double b) { return format_bytes(b); };
    plot.format_x = [](double n) { return group_digits(std::uint64_t(n)); };
    figure::save(figure::line_plot(plot), figures_dir, "08_kv_cache_memory.png");
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 08: attention at inference time -- KV cache, multi-query and grouped-query attention",
                    "08_kv_cache"};
    cli::LessonOptions opt;
    opt.dims.seq = 6;  // the prompt
    std::size_t kv_heads = 2, generate = 6, timed = 128;
    std::string figures_dir;
    cli::add_lesson_options(app, opt, "batch,seq,d-model,heads,seed");
    lesson::add_bounded_option(app, "--kv-heads", kv_heads, "key/value heads H_kv for step 6 (must divide --heads)", 1,
                               256);
    lesson::add_bounded_option(app, "--generate", generate,
                               "tokens decoded one at a time after the prompt of --seq tokens", 1, 4096);
    lesson::add_bounded_option(app, "--timed-tokens", timed,
                               "tokens generated in step 4's timing, with and without the cache", 1, 4096);
    lesson::add_save_figures(app, figures_dir, "this lesson's picture (PNG)");
    return lesson::run(app, argc, argv, [&] {
        const std::size_t B = opt.dims.batch, P = opt.dims.seq, d = opt.dims.d_model, H = opt.dims.heads;
        cli::require_divisible(d, H);
        const std::size_t dh = d / H;
        if (H % kv_heads != 0) {
            throw usage_error(
                fmt::format("--kv-heads {} does not divide --heads {}: query heads must share key/value "
                            "heads in equal groups (H / H_kv would be {:g})",
                            kv_heads, H, double(H) / double(kv_heads)));
        }
        const Sizes z{B, P, P + generate, d, H, dh};  // N: every token, prompt and generated
        const Tracer trace(!opt.quiet);
        Random rng(opt.seed);
        fmt::print(
            "Lesson 08: attention at inference time   B={} prompt={} generated={} d_model={} H={} d_head={} "
            "H_kv={} seed={}\n",
            B, P, generate, d, H, dh, kv_heads, opt.seed);
        const Layer layer = the_layer(rng, z);
        KVCache cache = step1_prefill(trace, z, layer);
        step2_decode_one(trace, z, layer, cache);
        step3_decode_all(trace, z, layer, cache, generate);
        step4_cost_per_token(trace, rng, z, layer, timed);
        step5_cache_growth(trace, z, cache);
        step6_grouped_query(trace, rng, z, layer.x, kv_heads);
        step7_published_models(trace);
        figure_cache_memory(trace, figures_dir);
        return cli::exit_ok;
    });
}
