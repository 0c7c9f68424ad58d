// tests/gqa_reference.hpp -- a grouped-query module's output through the double-precision
// reference, for the tests of the layer and of its KV cache.
#pragma once

#include "headwise/reference/layer.hpp"

namespace headwise {

// q, k, v from the module, K/V repeated per group, attention_reference, then W_o.
inline Tensor3 reference_forward(const GroupedQueryAttention& m, const Tensor3& x, bool causal) {
    AttentionOptions o;
    o.causal = causal;
    const Tensor4 heads = attention_reference(m.project_q(x), repeat_kv(m.project_k(x), m.group()),
                                              repeat_kv(m.project_v(x), m.group()), o);
    return linear(merge_heads(heads), m.out_proj_weight, m.out_proj_bias);
}

}  // namespace headwise
