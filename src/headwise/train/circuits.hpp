// headwise/train/circuits.hpp -- what the trained heads do, measured on repeated sequences.
//
//   previous-token score of a head: its mean attention from each position n >= 1 to n - 1;
//   induction score: its mean attention from each token of the second copy (position second + i)
//     to the token after that token's first occurrence (first + i + 1);
//   copying score (the OV circuit, read by direct logit attribution): at every position s of every
//     sequence, with t the token there, take what the head writes when it attends to s alone,
//     o = W_o^h v_s (v_s: the head's value at s, made from LN(x) there), and read it the way the
//     unembedding reads the residual stream through LN_f: logits = W_U diag(g_f) (o - mean(o)),
//     LN_f's gain g_f and centring kept, its division by the standard deviation left out (one
//     positive number per query position: it cannot change which logit is largest). The score is
//     the fraction of positions at which t's own logit is the largest of the V: does attending to
//     a token raise that token? A head that copies scores near 1; chance is 1/V; a head that moves
//     a token somewhere other than the logits (a previous-token head writing "the token before me"
//     for a later layer's keys) can score near 0 and still matter;
//   copy loss: the cross-entropy on the predictable part of the second copy (the tokens
//     second + 1 .. second + length - 1, each predicted from the position before it);
//   seen mass, on those same targets: the model's probability on the distinct tokens already in
//     the sequence (positions 0 .. n), beside the share of the vocabulary they are (seen share) and
//     the loss of an even bet on them, ln(their count) (data only, no model): what knowing only
//     which tokens this sequence has shown is worth on the copy.
// A random model scores about 1/n on each attention score; chance copy loss is ln V.
// These are measures, not proofs: a head can score high on a pattern for another reason (on the
// fixed-period data a purely positional head scores high on induction); ablation (below) says
// whether the loss needs the head.
#pragma once

#include "headwise/train/data.hpp"
#include "headwise/train/model.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace headwise::train {

struct HeadRef {
    std::size_t layer = 0, head = 0;
    float score = 0.0f;
};

struct CircuitScores {
    std::vector<std::vector<float>> previous_token;                      // [layer][head]
    std::vector<std::vector<float>> induction;                           // [layer][head]
    std::vector<std::vector<float>> copying;                             // [layer][head]
    double loss = 0.0;                                                   // every next token
    double copy_loss = 0.0;                                              // the predictable part of the second copy
    double seen_mass = 0.0, seen_share = 0.0, seen_even_bet_loss = 0.0;  // on the copy loss's targets
    HeadRef best_previous_token(std::size_t layer = 0) const;            // the best head of that layer
    HeadRef best_induction() const;                                      // the best head of the last layer
};

// Runs the model on `batch` (with `options`' ablation, if any) and measures every head.
CircuitScores measure(const Params& params, const Batch& batch, const ForwardOptions& options = {});

// The copying score of every head [layer][head] from a forward pass's activations on `tokens`
// (B, N) (the values of each layer, LayerCache::v).
std::vector<std::vector<float>> copying_scores(const Params& params, const Activations& acts,
                                               std::span<const std::int32_t> tokens);

// One head replaced (model.hpp's Ablation) and the circuit measured again, both ways.
struct HeadAblation {
    std::size_t layer = 0, head = 0;
    CircuitScores zero, mean;
};

// Every head of every layer in turn, layer 0 first.
std::vector<HeadAblation> ablate_each_head(const Params& params, const Batch& batch);

}  // namespace headwise::train
