#include "headwise/train/trainer.hpp"

#include "headwise/fast/parallel.hpp"
#include "headwise/train/data.hpp"
#include "headwise/train/loss.hpp"

#include <algorithm>

#include <malloc.h>

namespace headwise::train {

namespace {

Params initial(const TrainOptions& o) {
    check(o.config);
    Random rng(o.seed);
    return init_params(o.config, rng);
}

double loss_and_grads(const Params& params, const Batch& batch, Params& grads, Activations& acts,
                      std::vector<float>& dlogits) {
    forward(params, batch.tokens, batch.batch, batch.seq, acts);
    dlogits.resize(acts.logits.size());
    const double loss = cross_entropy(acts.logits, params.config.vocab, next_token_targets(batch), dlogits);
    std::fill(grads.values.begin(), grads.values.end(), 0.0f);
    backward(params, batch.tokens, acts, dlogits, grads);
    return loss;
}

}  // namespace

Trainer::Trainer(const TrainOptions& options)
    : options_(options),
      data_rng_(options.seed * 0x9E3779B97F4A7C15ull + 1),  // a stream apart from the initialisation's
      params_(initial(options)),
      grads_(options.config),
      adamw_(params_.values.size(), options.adamw) {
    const std::size_t shards = std::min(fast::worker_count(), options.batch);
    if (shards > 1) shards_.assign(shards, Shard{Batch{}, Activations{}, {}, Params(options.config), 0.0});
}

double Trainer::step() {
    const Batch batch =
        make_batch(data_rng_, options_.batch, options_.config.context, options_.config.vocab, options_.data);
    const double loss =
        shards_.empty() ? loss_and_grads(params_, batch, grads_, acts_, dlogits_) : sharded_loss_and_grads(batch);
    adamw_.step(params_.values, grads_.values);
    return loss;
}

double Trainer::sharded_loss_and_grads(const Batch& batch) {
    const std::size_t S = shards_.size(), B = batch.batch, N = batch.seq;
    for (std::size_t s = 0; s < S; ++s) {  // sequences B s / S .. B (s + 1) / S - 1
        Batch& part = shards_[s].batch;
        const std::size_t first = B * s / S, last = B * (s + 1) / S;
        part.batch = last - first;
        part.seq = N;
        part.tokens.assign(batch.tokens.begin() + std::ptrdiff_t(first * N),
                           batch.tokens.begin() + std::ptrdiff_t(last * N));
    }
    fast::parallel_for(S, [&](std::size_t s, std::size_t) {
        const fast::SerialHere serial;  // every core runs a share already
        Shard& shard = shards_[s];
        shard.loss = loss_and_grads(params_, shard.batch, shard.grads, shard.acts, shard.dlogits);
    });
    // Each share's loss and gradients are means over its own positions, and every sequence has
    // N - 1 of them: the batch's means weigh each share by its sequences.
    std::fill(grads_.values.begin(), grads_.values.end(), 0.0f);
    double loss = 0.0;
    for (const Shard& shard : shards_) {
        const float share = float(shard.batch.batch) / float(B);
        loss += double(share) * shard.loss;
        for (std::size_t i = 0; i < grads_.values.size(); ++i) grads_.values[i] += share * shard.grads.values[i];
    }
    return loss;
}

double loss_and_grads(const Params& params, const Batch& batch, Params& grads) {
    Activations acts;
    std::vector<float> dlogits;
    return loss_and_grads(params, batch, grads, acts, dlogits);
}

void keep_freed_memory() {
    ::mallopt(M_MMAP_THRESHOLD, 256 << 20);
    ::mallopt(M_TRIM_THRESHOLD, 512 << 20);
    ::mallopt(M_TOP_PAD, 64 << 20);
}

}  // namespace headwise::train
