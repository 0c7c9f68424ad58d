// tests/grade/04_causal_mask.hpp -- exercise 04 as the grader sees it: a table of its functions.
#pragma once

#include "causal_mask.hpp"
#include "registry.hpp"

namespace headwise::grade {

struct Ex04 {
    Mask2 (*causal_mask)(std::size_t n);
    Tensor4 (*masked_attention)(const Tensor4& q, const Tensor4& k, const Tensor4& v, const Mask2& attn_mask,
                                const Mask2& key_padding_mask, Tensor4& weights);
};

}  // namespace headwise::grade

namespace {
// The functions of namespace headwise::ex04 (in the catalogue's build, a mistake's).
[[maybe_unused]] headwise::grade::Ex04 bind_ex04() {
    return {&headwise::ex04::causal_mask, &headwise::ex04::masked_attention};
}
}  // namespace
