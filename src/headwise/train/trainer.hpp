// headwise/train/trainer.hpp -- the training loop `headwise train` and lesson 11 share.
//
// Each step draws a fresh batch of repeated sequences (data.hpp, of the options' kind), runs the model forward, takes
// cross-entropy on every next token, runs it backward and takes one AdamW step. With several
// threads the batch is shared out (data parallel): each thread runs forward and backward on its
// own sequences, single-threaded, and the shares' gradients are summed, weighted by their size:
// the model is too small for its products to be worth splitting. Everything is seeded: the same
// seed and thread count give the same run, bit for bit.
#pragma once

#include "headwise/base/random.hpp"
#include "headwise/train/adamw.hpp"
#include "headwise/train/data.hpp"
#include "headwise/train/model.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headwise::train {

struct TrainOptions {
    Config config;
    std::size_t batch = 32;
    DataKind data = DataKind::random_repeat;  // the task (data.hpp): random-repeat, or the fixed-period control
    AdamWOptions adamw;
    std::uint64_t seed = 1;
};

class Trainer {
public:
    explicit Trainer(const TrainOptions& options);
    // One step on a fresh batch; returns its loss (before the update).
    double step();
    const Params& params() const { return params_; }
    const Params& grads() const { return grads_; }  // the last step's gradients
    long steps() const { return adamw_.steps(); }
    const TrainOptions& options() const { return options_; }

private:
    TrainOptions options_;
    Random data_rng_;
    Params params_, grads_;
    AdamW adamw_;
    Activations acts_;
    std::vector<float> dlogits_;
    // One share of each batch per thread, kept from step to step (none on one thread).
    struct Shard {
        Batch batch;
        Activations acts;
        std::vector<float> dlogits;
        Params grads;
        double loss = 0.0;
    };
    std::vector<Shard> shards_;
    double sharded_loss_and_grads(const Batch& batch);
};

// The loss and gradients of one batch (no update): what the gradient tests compare with PyTorch.
double loss_and_grads(const Params& params, const Batch& batch, Params& grads);

// Every step allocates and frees the same few megabytes (attention outputs, gradients). glibc's
// defaults hand memory above 128 KiB back to the kernel when it is freed, and every step then
// faults it in again, zeroed: a fifth of a step's CPU time at the default sizes. This keeps it
// (process-wide: mallopt), for a program whose work is training -- `headwise train`, lesson 11.
void keep_freed_memory();

}  // namespace headwise::train
