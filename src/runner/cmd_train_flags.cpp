// runner/cmd_train_flags.cpp -- `headwise train`'s flags and help (cmd_train.hpp).
#include "cmd_train.hpp"
#include "common.hpp"

#include <CLI/CLI.hpp>

#include <memory>

namespace headwise::runner {

void add_train_command(CLI::App& app, Action& action) {
    auto a = std::make_shared<TrainArgs>();
    auto* cmd = app.add_subcommand(
        "train", "train lesson 11's small transformer from scratch on this CPU and watch an induction head form");
    cmd->footer(
        "Example:\n"
        "  ./headwise train --save model.safetensors --log loss.csv\n"
        "  scripts/check-induction model.safetensors   # an independent PyTorch check\n");
    cmd->add_option("--vocab", a->vocab, "tokens in the vocabulary (V, >= 2)")->capture_default_str();
    cmd->add_option("--context", a->context, "tokens per sequence (N, >= 8)")->capture_default_str();
    cmd->add_option("--d-model", a->d_model, "width of the residual stream (d)")->capture_default_str();
    cmd->add_option("--heads", a->heads, "heads per layer (must divide d-model)")->capture_default_str();
    cmd->add_option("--layers", a->layers, "attention layers")->capture_default_str();
    cmd->add_option("--batch", a->batch, "sequences per step")->capture_default_str();
    cmd->add_option("--steps", a->steps, "training steps")->capture_default_str();
    cmd->add_option("--lr", a->lr, "AdamW learning rate")->capture_default_str();
    cmd->add_option("--weight-decay", a->weight_decay, "AdamW decoupled weight decay")->capture_default_str();
    cmd->add_option("--data", a->data,
                    "random-repeat (the repeat anywhere), or fixed-period (the control: the second half copies the "
                    "first)")
        ->capture_default_str();
    cmd->add_option("--seed", a->seed, "seed of the initialisation and the data")->capture_default_str();
    cmd->add_option("--threads", a->threads, "threads (default or 0: the CPUs this process may use)");
    cmd->add_option("--save", a->save, "write the trained model (.safetensors, F32)");
    cmd->add_option("--log", a->log, "write step,loss for every step (.csv)");
    cmd->callback([&action, a] { action = [a] { return run_training(*a); }; });
}

}  // namespace headwise::runner
