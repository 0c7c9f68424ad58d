// runner/cmd_heads_flags.cpp -- `headwise heads`'s flags and help (cmd_heads.hpp).
#include "cmd_heads.hpp"
#include "common.hpp"

#include <CLI/CLI.hpp>

#include <memory>

namespace headwise::runner {

void add_heads_command(CLI::App& app, Action& action) {
    auto a = std::make_shared<HeadsArgs>();
    auto* cmd = app.add_subcommand(
        "heads", "lesson 07's trained model on your sentence: tokens, head roles, a heat map, .npy out");
    cmd->footer(
        "Example:\n"
        "  ./headwise heads --sentence \"The dog could not jump the fence because it was too tired.\" \\\n"
        "                   --layer 0 --head 2 --attention att.npy --embedding emb.npy\n"
        "  ./headwise heads --sentence \"The cat sat on the mat.\" --sentence-b \"It was tired.\" --html heads.html\n"
        "The model comes from scripts/fetch-model (HEADWISE_MODEL_DIR points at another copy).\n");
    cmd->add_option("--sentence", a->sentence, "the text to run (UTF-8, at most 512 tokens with [CLS] and [SEP])")
        ->required();
    cmd->add_option("--sentence-b", a->sentence_b,
                    "a second sentence: the input becomes the pair [CLS] a [SEP] b [SEP]")
        ->each([a](const std::string&) { a->sentence_b_given = true; });
    cmd->add_option("--layer", a->layer, "the layer whose head is drawn (0-5; default 0)");
    cmd->add_option("--head", a->head, "the head drawn (0-11; default: the layer's sharpest)");
    cmd->add_flag("--tokens", a->tokens_only, "only print the WordPiece tokens and ids");
    cmd->add_option("--attention", a->attention, "write every layer's attention (L, H, N, N) float32 .npy");
    cmd->add_option("--embedding", a->embedding, "write the sentence embedding (d_model,) float32 .npy");
    cmd->add_option("--html", a->html,
                    "write an interactive page: head view, model view with roles, ablation view (one offline file)");
    cmd->callback([&action, a] { action = [a] { return run_heads(*a); }; });
}

}  // namespace headwise::runner
