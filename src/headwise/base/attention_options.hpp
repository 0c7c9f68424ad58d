// headwise/base/attention_options.hpp -- what an attention call is asked to do (mask, scale), shared
// by the reference attention (reference/attention.hpp) and the fast path (fast/fused_attention.hpp),
// so neither has to include the other's header.
#pragma once

#include "headwise/base/tensor.hpp"

#include <optional>

namespace headwise {

struct AttentionOptions {
    bool causal = false;                      // query i sees keys 0..i only
    const Mask2* attn_mask = nullptr;         // (N_q, N_k), true = masked; broadcast over B and H
    const Mask2* key_padding_mask = nullptr;  // (B, N_k), true = padding, ignored by every query
    std::optional<float> scale;               // default 1 / sqrt(d_head)
};

}  // namespace headwise
