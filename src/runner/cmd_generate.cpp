// `headwise generate` -- lesson 12's decoder (SmolLM2-135M-Instruct) writes: the prompt through the
// course's attention, then one token at a time, each printed as it comes.
//
//   --prompt TEXT (or the text on stdin)   --chat wraps it in the model's chat template
//   --max-tokens N   --temperature T (0: greedy, deterministic)   --top-k K   --top-p P   --seed S
//   --exact          the float32 path (every weight dequantized) instead of the fast one
//   --ids            also print the prompt's and the continuation's token ids
//   --logits F.npy   write the prompt's logits, (N, vocab) float32 (--max-tokens 0: score only)
//   --threads N      threads for the products (default: the machine's CPUs, HEADWISE_THREADS)
//   --timings F.json the run's figures for scripts (scripts/bench-decode): tokens, seconds, the
//                    peak resident memory, the bytes a decode step reads and this machine's read rate
//
// Then, on stderr: prompt tokens/s, time to first token, decode tokens/s. The model is the one
// scripts/fetch-model caches (HEADWISE_DECODER_DIR points at another folder holding the .gguf).
#include "cmd_generate.hpp"
#include "common.hpp"

#include "headwise/fast/bandwidth.hpp"
#include "headwise/io/npy.hpp"
#include "headwise/model/quant_dot.hpp"
#include "headwise/model/llama.hpp"

#include <fmt/format.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

namespace headwise::runner {

namespace {

using clock = std::chrono::steady_clock;
double seconds_since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

void check_args(const GenerateArgs& a) {
    if (a.max_tokens < 0 || a.max_tokens > 1 << 20)
        throw usage_error(fmt::format("--max-tokens {}: must be 0 to 1048576", a.max_tokens));
    if (a.top_k < 0) throw usage_error(fmt::format("--top-k {}: must be 0 (every token) or more", a.top_k));
    if (a.threads < 0 || a.threads > 1024) throw usage_error(fmt::format("--threads {}: must be 1 to 1024", a.threads));
    if (a.max_tokens == 0 && a.logits.empty() && a.timings.empty())
        throw usage_error("--max-tokens 0 generates nothing: give --logits FILE.npy to score the prompt");
    if (a.prompt_tokens < 0) throw usage_error(fmt::format("--prompt-tokens {}: must be 1 or more", a.prompt_tokens));
}

int compute(GenerateArgs a) {
    check_args(a);
    llama::Sampling sampling;
    sampling.temperature = static_cast<float>(a.temperature);
    sampling.top_k = static_cast<std::size_t>(a.top_k);
    sampling.top_p = static_cast<float>(a.top_p);
    sampling.seed = a.seed;
    llama::validate(sampling);
    if (!a.prompt_given) a.prompt.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (a.prompt.empty()) throw usage_error("the prompt is empty: give --prompt TEXT or the text on stdin");

    const llama::Model model =
        llama::Model::open(a.model.empty() ? llama::default_model_path() : std::filesystem::path(a.model));
    const llama::Config& config = model.config();
    const std::string text = a.chat ? model.chat_prompt(a.prompt) : a.prompt;
    std::vector<std::int32_t> prompt = model.tokenizer().encode(text, a.chat);
    if (a.prompt_tokens > 0) {
        if (static_cast<std::size_t>(a.prompt_tokens) > prompt.size())
            throw usage_error(
                fmt::format("--prompt-tokens {}: the prompt has only {} tokens", a.prompt_tokens, prompt.size()));
        prompt.resize(static_cast<std::size_t>(a.prompt_tokens));
    }
    if (prompt.empty()) throw usage_error("the prompt has no tokens");
    const std::size_t total = prompt.size() + static_cast<std::size_t>(a.max_tokens);
    if (total > config.context)
        throw usage_error(
            fmt::format("the prompt's {} tokens and --max-tokens {} make {}, past the model's context of {}",
                        prompt.size(), a.max_tokens, total, config.context));
    if (a.ids) fmt::print(stderr, "prompt ids ({}): {}\n", prompt.size(), fmt::join(prompt, " "));

    llama::Session session(model, a.exact ? llama::Path::exact : llama::Path::fast, total,
                           static_cast<std::size_t>(a.threads));
    llama::Sampler sampler(sampling);
    const bool all_logits = !a.logits.empty();
    std::vector<float> logits((all_logits ? prompt.size() : 1) * config.vocab);

    const auto start = clock::now();
    session.forward(prompt, logits.data(), all_logits);
    const double prompt_seconds = seconds_since(start);
    if (all_logits) {
        const std::string header = npy::encode_header({prompt.size(), config.vocab});
        npy::PendingFile file(a.logits, {header, {reinterpret_cast<const char*>(logits.data()), logits.size() * 4}});
        file.commit();
    }

    // decode: the next token from the last logits, printed as soon as its text is complete
    std::vector<std::int32_t> generated;
    bpe::Tokenizer::Stream stream(model.tokenizer());
    const float* last = logits.data() + (all_logits ? (prompt.size() - 1) * config.vocab : 0);
    std::vector<float> next(last, last + config.vocab);
    double first_token_seconds = 0.0;
    const auto decode_start = clock::now();
    for (long long t = 0; t < a.max_tokens; ++t) {
        const std::int32_t id = sampler.next(next);
        if (t == 0) first_token_seconds = seconds_since(start);
        generated.push_back(id);
        if (!a.no_stop && (id == model.eos() || id == model.im_end())) break;
        fmt::print("{}", stream.push(id));
        std::fflush(stdout);
        if (t + 1 < a.max_tokens) session.forward(std::span(&id, 1), next.data());
    }
    const double decode_seconds = seconds_since(decode_start);
    fmt::print("{}\n", stream.flush());
    std::fflush(stdout);

    if (a.ids) fmt::print(stderr, "continuation ids ({}): {}\n", generated.size(), fmt::join(generated, " "));
    const std::size_t decoded = generated.empty() ? 0 : generated.size() - 1;  // forward passes after the prompt's
    const std::string threads = a.threads == 0 ? std::string("all") : std::to_string(a.threads);
    if (a.max_tokens == 0)
        fmt::print(stderr,
                   "headwise generate ({} path, {} threads): prompt {} tokens scored in {:.1f} ms ({:.1f} tokens/s)\n",
                   llama::to_string(session.path()), threads, prompt.size(), prompt_seconds * 1e3,
                   double(prompt.size()) / prompt_seconds);
    else
        fmt::print(stderr,
                   "headwise generate ({} path, {} threads): prompt {} tokens in {:.1f} ms ({:.1f} tokens/s); first "
                   "token after {:.1f} ms; {} more tokens at {:.1f} tokens/s\n",
                   llama::to_string(session.path()), threads, prompt.size(), prompt_seconds * 1e3,
                   double(prompt.size()) / prompt_seconds, first_token_seconds * 1e3, decoded,
                   decoded == 0 ? 0.0 : double(decoded) / decode_seconds);
    if (!a.timings.empty()) {
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        const nlohmann::json j = {
            {"path", llama::to_string(session.path())},
            {"isa", quant::to_string(quant::active_isa())},
            {"threads", a.threads},
            {"prompt_tokens", prompt.size()},
            {"prompt_seconds", prompt_seconds},
            {"first_token_seconds", first_token_seconds},
            {"decode_tokens", decoded},
            {"decode_seconds", decode_seconds},
            {"max_rss_bytes", std::uint64_t(usage.ru_maxrss) * 1024},
            {"model_file_bytes", model.file().file_bytes()},
            {"bytes_per_token", model.bytes_per_token()},
            {"read_gb_per_s", fast::read_rate(std::size_t{512} << 20, static_cast<std::size_t>(a.threads))}};
        npy::PendingFile file(a.timings, j.dump(2) + "\n");
        file.commit();
    }
    return 0;
}

}  // namespace

int run_generate(GenerateArgs a) {
    try {
        return compute(std::move(a));
    } catch (const headwise::usage_error& e) {  // bad prompt, bad path, missing or damaged model: exit 2
        throw usage_error(e.what());
    }
}

}  // namespace headwise::runner
