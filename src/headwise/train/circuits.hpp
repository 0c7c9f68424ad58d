// headwise/train/circuits.hpp -- what the trained heads do, measured on repeated sequences.
//
//   previous-token score of a head: its mean attention from each position n >= 1 to n - 1;
//   induction score: its mean attention from each token of the second copy (position second + i)
//     to the token after that token's first occurrence (first + i + 1);
//   copy loss: the cross-entropy on the predictable part of the second copy (the tokens
//     second + 1 .. second + length - 1, each predicted from the position before it).
// A random model scores about 1/n on each; chance copy loss is ln V.
#pragma once

#include "headwise/train/data.hpp"
#include "headwise/train/model.hpp"

#include <cstddef>
#include <vector>

namespace headwise::train {

struct HeadRef {
    std::size_t layer = 0, head = 0;
    float score = 0.0f;
};

struct CircuitScores {
    std::vector<std::vector<float>> previous_token;            // [layer][head]
    std::vector<std::vector<float>> induction;                 // [layer][head]
    double loss = 0.0;                                         // every next token
    double copy_loss = 0.0;                                    // the predictable part of the second copy
    HeadRef best_previous_token(std::size_t layer = 0) const;  // the best head of that layer
    HeadRef best_induction() const;                            // the best head of the last layer
};

// Runs the model on `batch` (with `options`' ablation, if any) and measures every head.
CircuitScores measure(const Params& params, const Batch& batch, const ForwardOptions& options = {});

}  // namespace headwise::train
