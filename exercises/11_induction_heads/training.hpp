// Exercise 11 -- the two pieces of training that are not the model: cross-entropy with its
// gradient w.r.t. the logits, and one AdamW step (lesson 11).
//
// You write cross_entropy and adamw_step, declared here, in training.cpp. This header is shared
// with the grader: do not change the signatures.
//
// Dimension letters: B = batch, N = positions, V = vocabulary, P = parameters.
#pragma once

#include "exercise.hpp"

#include "headwise/train/adamw.hpp"

#include <xtensor/xtensor.hpp>

#include <cstdint>

namespace headwise::optimiser {

// What AdamW remembers between steps.
struct AdamWState {
    Tensor1 m;     // (P) running mean of the gradients, starts at 0
    Tensor1 v;     // (P) running mean of their squares, starts at 0
    int step = 0;  // steps taken so far
};

}  // namespace headwise::optimiser

namespace headwise::ex11 {

// targets (B, N): the token each position must predict, or -1 where there is none (the last
// position of a sequence), which is not counted.
using Targets = xt::xtensor<std::int32_t, 2>;

// The mean over the counted positions (b, n) of  -log softmax(logits(b, n, :))[targets(b, n)],
// for logits (B, N, V). Must stay finite for logits like 1e4. When `dlogits` is not null it
// receives d loss / d logits (B, N, V): (softmax - one-hot of the target) / count at a counted
// position, 0 at one that is not. With no position counted the loss is 0 and dlogits all 0.
float cross_entropy(const Tensor3& logits, const Targets& targets, Tensor3* dlogits = nullptr);

// lr (1e-3), beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay (0.01): the library's options,
// the ones `headwise train` uses (headwise/train/adamw.hpp).
using AdamWOptions = train::AdamWOptions;

using optimiser::AdamWState;  // what AdamW remembers between steps (above)

// One AdamW step (torch.optim.AdamW): params (P) move against grads (P); state.m, state.v and
// state.step are updated. Decoupled weight decay, bias-corrected moments.
void adamw_step(Tensor1& params, const Tensor1& grads, AdamWState& state, const AdamWOptions& options);

}  // namespace headwise::ex11
