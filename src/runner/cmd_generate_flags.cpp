// runner/cmd_generate_flags.cpp -- `headwise generate`'s flags and help (cmd_generate.hpp).
#include "cmd_generate.hpp"
#include "common.hpp"

#include <CLI/CLI.hpp>

#include <memory>

namespace headwise::runner {

void add_generate_command(CLI::App& app, Action& action) {
    auto a = std::make_shared<GenerateArgs>();
    auto* cmd =
        app.add_subcommand("generate", "lesson 12's decoder (SmolLM2-135M) continues your text, token by token");
    cmd->footer(
        "Examples:\n"
        "  ./headwise generate --prompt \"The capital of France is\" --max-tokens 16\n"
        "  ./headwise generate --chat --prompt \"What is attention in a transformer?\" --temperature 0.7 --seed 1\n"
        "  echo \"Once upon a time\" | ./headwise generate --top-k 40 --top-p 0.9 --temperature 0.8\n"
        "  ./headwise generate --prompt \"Hello world\" --max-tokens 0 --logits logits.npy\n"
        "The model comes from scripts/fetch-model (HEADWISE_DECODER_DIR points at another folder with the .gguf).\n");
    cmd->add_option("--prompt", a->prompt, "the text to continue (default: read stdin)")->each([a](const std::string&) {
        a->prompt_given = true;
    });
    cmd->add_option("--max-tokens", a->max_tokens, "tokens to generate (default 64; 0 with --logits: score only)");
    cmd->add_option("--temperature", a->temperature, "0 = greedy, deterministic (default); higher = more varied");
    cmd->add_option("--top-k", a->top_k, "sample among the k most likely tokens only (default 0 = all)");
    cmd->add_option("--top-p", a->top_p, "sample among the most likely tokens whose probability reaches p, (0, 1]");
    cmd->add_option("--seed", a->seed, "the sampler's seed: the same seed gives the same text");
    cmd->add_flag("--chat", a->chat, "wrap the prompt in the model's chat template (a user turn)");
    cmd->add_flag("--exact", a->exact, "the float32 path: every weight dequantized, BLAS products");
    cmd->add_option("--prompt-tokens", a->prompt_tokens, "keep only the prompt's first N tokens (benchmarks)");
    cmd->add_flag("--no-stop", a->no_stop, "go on past the end-of-text token, to exactly --max-tokens (benchmarks)");
    cmd->add_flag("--ids", a->ids, "also print the prompt's and the continuation's token ids (stderr)");
    cmd->add_option("--logits", a->logits, "write the prompt's logits, (N, vocab) float32 .npy");
    cmd->add_option("--threads", a->threads, "threads for the products (default: the machine's CPUs)");
    cmd->add_option("--timings", a->timings, "write the run's figures as JSON (tokens, seconds, memory, read rate)");
    cmd->add_option("--model", a->model, "a .gguf file (default: the one scripts/fetch-model caches)");
    cmd->callback([&action, a] { action = [a] { return run_generate(*a); }; });
}

}  // namespace headwise::runner
