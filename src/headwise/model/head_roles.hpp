// headwise/model/head_roles.hpp -- what a trained head does, measured from its attention weights.
//
// Every measure takes one head's weights for one sentence, w (N, N) with rows = queries and
// columns = keys, and the number of real tokens n (the rest is padding and ignored), and averages
// over the query rows it concerns. Nothing here knows which head is which: lesson 07 and
// `headwise heads` find the roles by ranking every head on these numbers.
#pragma once

#include "headwise/base/tensor.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace headwise::roles {

// Mean weight that token i puts on token i - 1 (rows 1..n-1). 1 = a perfect previous-token head.
double previous_token(const Tensor2& w, std::size_t n);
// Mean weight that token i puts on token i + 1 (rows 0..n-2).
double next_token(const Tensor2& w, std::size_t n);
// Mean weight that the n queries put on key `key` (e.g. 0 = [CLS], n - 1 = [SEP]): the share of
// the head's attention that goes to that one token.
double share_on(const Tensor2& w, std::size_t n, std::size_t key);
// Mean entropy (nats) of the n query rows over the n real keys: 0 = each query looks at one key,
// ln n = every query spreads evenly.
double mean_entropy(const Tensor2& w, std::size_t n);

// The role a head's weights show most clearly, in a few words, from the measures above:
//   "previous-token" / "next-token"   > 0.5 of the weight on that neighbour (lesson 07's cut)
//   "<first> sink" / "<last> sink"     > 60% of the attention on key 0 / key n - 1 (lesson 07's cut)
// the strongest of those when several pass, else by mean entropy relative to ln n:
//   "sharp" (< 0.3), "broad" (> 0.85), "mixed" between. `first` and `last` name the end tokens
// ("[CLS]" and "[SEP]" in BERT). The head view labels each head with it.
std::string role(const Tensor2& w, std::size_t n, std::string_view first = "[CLS]", std::string_view last = "[SEP]");

}  // namespace headwise::roles
