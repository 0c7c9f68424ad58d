// Exercise 11 -- cross-entropy with its gradient, and one AdamW step.
//
// Read lesson 11 first (./headwise run 11, lessons/11_induction_heads.cpp, docs/11_induction_heads.md).
// Grade with:  ./headwise grade 11    (or: ctest --preset grade -L ex11)
// Stuck? ./headwise hint 11 shows one hint at a time (exercises/11_induction_heads/HINTS.md).
//
// logits(b, n, j) reads one element, Tensor3::from_shape({B, N, V}) makes a new tensor;
// targets(b, n) is a token id or -1. Plain loops are all you need.
#include "training.hpp"

#include <algorithm>
#include <cmath>

namespace headwise::ex11 {

float cross_entropy(const Tensor3& logits, const Targets& targets, Tensor3* dlogits) {
    // BEGIN SOLUTION
    const std::size_t batch = logits.shape()[0], n = logits.shape()[1], vocab = logits.shape()[2];
    std::size_t count = 0;
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t i = 0; i < n; ++i) count += targets(b, i) >= 0;
    if (dlogits != nullptr) {
        *dlogits = Tensor3::from_shape({batch, n, vocab});  // (B, N, V)
        dlogits->fill(0.0f);
    }
    double total = 0.0;
    for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t i = 0; i < n; ++i) {
            const std::int32_t t = targets(b, i);
            if (t < 0) continue;
            // log softmax = z - m - log(sum exp(z - m)): with the row's maximum m subtracted,
            // exp() never overflows, even for logits like 1e4.
            float m = logits(b, i, 0);
            for (std::size_t j = 1; j < vocab; ++j) m = std::max(m, logits(b, i, j));
            double sum = 0.0;
            for (std::size_t j = 0; j < vocab; ++j) sum += std::exp(double(logits(b, i, j) - m));
            total += std::log(sum) - double(logits(b, i, t) - m);
            if (dlogits == nullptr) continue;
            for (std::size_t j = 0; j < vocab; ++j)
                (*dlogits)(b, i, j) = float(std::exp(double(logits(b, i, j) - m)) / sum) / float(count);
            (*dlogits)(b, i, t) -= 1.0f / float(count);
        }
    }
    return count == 0 ? 0.0f : float(total / double(count));
    // STUB
    // TODO(ex11): the mean cross-entropy over the positions whose target is not -1, stable for
    // logits like 1e4; when dlogits is not null, fill it with (softmax - one-hot) / count at those
    // positions and 0 elsewhere (lesson 11, steps 2 and 3).
    not_implemented_yet();
    // END SOLUTION
}

void adamw_step(Tensor1& params, const Tensor1& grads, AdamWState& state, const AdamWOptions& o) {
    // BEGIN SOLUTION
    const std::size_t count = params.shape()[0];
    if (state.m.size() != count) {
        state.m = Tensor1::from_shape({count});
        state.m.fill(0.0f);
        state.v = Tensor1::from_shape({count});
        state.v.fill(0.0f);
    }
    state.step += 1;
    const float correction1 = 1.0f - std::pow(o.beta1, float(state.step));
    const float correction2 = 1.0f - std::pow(o.beta2, float(state.step));
    for (std::size_t i = 0; i < count; ++i) {
        const float g = grads(i);
        // Decoupled weight decay: the parameter shrinks on its own, not through the gradient.
        params(i) -= o.lr * o.weight_decay * params(i);
        state.m(i) = o.beta1 * state.m(i) + (1.0f - o.beta1) * g;
        state.v(i) = o.beta2 * state.v(i) + (1.0f - o.beta2) * g * g;
        const float m_hat = state.m(i) / correction1;
        const float v_hat = state.v(i) / correction2;
        params(i) -= o.lr * m_hat / (std::sqrt(v_hat) + o.eps);
    }
    return;
    // STUB
    // TODO(ex11): one AdamW step: count the step, decay params by lr * weight_decay, update the
    // moments m and v (zero-sized at first: start them at 0), correct their bias with the step
    // count, and move params by lr * m_hat / (sqrt(v_hat) + eps) (lesson 11, step 3).
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex11
