#include "headwise/train/trainer.hpp"

#include "headwise/train/data.hpp"
#include "headwise/train/loss.hpp"

#include <algorithm>

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
      adamw_(params_.values.size(), options.adamw) {}

double Trainer::step() {
    const Batch batch = make_batch(data_rng_, options_.batch, options_.config.context, options_.config.vocab);
    const double loss = loss_and_grads(params_, batch, grads_, acts_, dlogits_);
    adamw_.step(params_.values, grads_.values);
    return loss;
}

double loss_and_grads(const Params& params, const Batch& batch, Params& grads) {
    Activations acts;
    std::vector<float> dlogits;
    return loss_and_grads(params, batch, grads, acts, dlogits);
}

}  // namespace headwise::train
