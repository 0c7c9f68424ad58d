// headwise/train/loss.hpp -- cross-entropy on every next token, and its gradient w.r.t. the logits.
//
//   loss = mean over counted rows r of  logsumexp(logits[r]) - logits[r, target[r]]
//   dloss/dlogits[r] = (softmax(logits[r]) - onehot(target[r])) / count
//
// Rows whose target is negative (the last position of a sequence has no next token) are not
// counted and get a zero gradient.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace headwise::train {

// logits (rows, V), targets (rows); dlogits (rows, V) is written when not empty. Returns the mean loss.
double cross_entropy(std::span<const float> logits, std::size_t vocab, std::span<const std::int32_t> targets,
                     std::span<float> dlogits = {});

}  // namespace headwise::train
