// tests/grade/11_induction_heads.hpp -- exercise 11 as the grader sees it: a table of its functions.
#pragma once

#include "registry.hpp"
#include "training.hpp"

namespace headwise::grade {

struct Ex11 {
    float (*cross_entropy)(const Tensor3& logits, const ex11::Targets& targets, Tensor3* dlogits);
    void (*adamw_step)(Tensor1& params, const Tensor1& grads, ex11::AdamWState& state,
                       const ex11::AdamWOptions& options);
};

}  // namespace headwise::grade

namespace {
// The functions of namespace headwise::ex11 (in the catalogue's build, a mistake's).
[[maybe_unused]] headwise::grade::Ex11 bind_ex11() {
    return {&headwise::ex11::cross_entropy, &headwise::ex11::adamw_step};
}
}  // namespace
