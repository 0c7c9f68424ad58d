// headwise/train/adamw.hpp -- AdamW (Loshchilov & Hutter), as torch.optim.AdamW computes it.
//
//   p <- p - lr * weight_decay * p                      decoupled weight decay
//   m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2
//   p <- p - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)    bias-corrected, t = 1, 2, ...
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace headwise::train {

struct AdamWOptions {
    float lr = 1e-3f;
    float beta1 = 0.9f, beta2 = 0.999f;
    float eps = 1e-8f;
    float weight_decay = 0.01f;
};

class AdamW {
public:
    AdamW(std::size_t count, const AdamWOptions& options) : options_(options), m_(count, 0.0f), v_(count, 0.0f) {}
    // One step on every parameter (params and grads the same length as `count`).
    void step(std::span<float> params, std::span<const float> grads);
    long steps() const { return t_; }
    const AdamWOptions& options() const { return options_; }

private:
    AdamWOptions options_;
    std::vector<float> m_, v_;  // first and second moments
    long t_ = 0;
};

}  // namespace headwise::train
