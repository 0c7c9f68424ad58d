// Exercise 08 -- one decode step with a grouped-query KV cache (lesson 08).
//
// You write decode_step, declared here, in kv_cache.cpp. This header is shared with the grader:
// do not change the signatures.
//
// Dimension letters: B = batch, H = query heads, H_kv = key/value heads (H_kv divides H),
// g = H / H_kv query heads per key/value head, d_head = per-head width, t = tokens cached so far.
#pragma once

#include "exercise.hpp"

#include <functional>

namespace headwise::decoding {

// A token block's projections, split into heads:
//   q (B, H, n, d_head), k and v (B, H_kv, n, d_head) for x (B, n, d_model).
struct Projection {
    Tensor4 q, k, v;
};
// Projects x (B, n, d_model). Each call costs n tokens' worth of matrix products.
using Project = std::function<Projection(const Tensor3& x)>;

// The key/value cache: storage for `capacity` tokens, filled from position 0.
struct Cache {
    Tensor4 k;               // (B, H_kv, capacity, d_head): positions 0 .. length - 1 hold tokens 0 .. length - 1
    Tensor4 v;               // (B, H_kv, capacity, d_head)
    std::size_t length = 0;  // tokens cached so far
};

}  // namespace headwise::decoding

namespace headwise::ex08 {

using decoding::Cache;
using decoding::Project;
using decoding::Projection;

// One step of generation. `tokens` (B, t + 1, d_model) holds every token so far, the new one last;
// the cache holds the keys and values of the first t (cache.length == t).
//   - store the new token's k and v at position t of the cache (cache.length becomes t + 1);
//     a cache that is already full (length == capacity) is bad input: throw headwise::usage_error
//   - attend the new token's query over the t + 1 cached keys and values, query head h reading
//     key/value head h / (H / H_kv), scores scaled by 1 / sqrt(d_head)
// Returns the new token's attention output per head, (B, H, 1, d_head) -- not yet merged, no W_o.
Tensor4 decode_step(Cache& cache, const Tensor3& tokens, const Project& project);

}  // namespace headwise::ex08
