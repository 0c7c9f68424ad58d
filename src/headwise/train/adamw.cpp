#include "headwise/train/adamw.hpp"

#include <cmath>
#include <stdexcept>

namespace headwise::train {

void AdamW::step(std::span<float> params, std::span<const float> grads) {
    if (params.size() != m_.size() || grads.size() != m_.size())
        throw std::invalid_argument("AdamW::step: params and grads must have the optimiser's size");
    ++t_;
    const AdamWOptions& o = options_;
    const float decay = 1.0f - o.lr * o.weight_decay;
    const float c1 = 1.0f / (1.0f - float(std::pow(double(o.beta1), double(t_))));
    const float c2 = 1.0f / (1.0f - float(std::pow(double(o.beta2), double(t_))));
    for (std::size_t i = 0; i < params.size(); ++i) {
        const float g = grads[i];
        m_[i] = o.beta1 * m_[i] + (1.0f - o.beta1) * g;
        v_[i] = o.beta2 * v_[i] + (1.0f - o.beta2) * g * g;
        params[i] = params[i] * decay - o.lr * (m_[i] * c1) / (std::sqrt(v_[i] * c2) + o.eps);
    }
}

}  // namespace headwise::train
