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
    // TODO(ex11): the mean cross-entropy over the positions whose target is not -1, stable for
    // logits like 1e4; when dlogits is not null, fill it with (softmax - one-hot) / count at those
    // positions and 0 elsewhere (lesson 11, steps 2 and 3).
    not_implemented_yet();
}

void adamw_step(Tensor1& params, const Tensor1& grads, AdamWState& state, const AdamWOptions& o) {
    // TODO(ex11): one AdamW step: count the step, decay params by lr * weight_decay, update the
    // moments m and v (zero-sized at first: start them at 0), correct their bias with the step
    // count, and move params by lr * m_hat / (sqrt(v_hat) + eps) (lesson 11, step 3).
    not_implemented_yet();
}

}  // namespace headwise::ex11
