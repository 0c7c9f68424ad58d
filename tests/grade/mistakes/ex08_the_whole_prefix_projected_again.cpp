// mistake: the whole prefix projected again at every step
// Every step re-projected all t + 1 tokens and rebuilt the cache: right numbers, but O(N) projections per token, O(N^2) in all.
// The cache already holds tokens 0 .. t - 1: project only the newest token, tokens[:, t], and append it (lesson 08, step 4).
#include "kv_cache.hpp"

#include "headwise/inference/kv_cache.hpp"

#include <xtensor/xview.hpp>

#include <cmath>
#include <string>

namespace headwise::ex08 {

namespace {
// Positions 0 .. n - 1 of a (B, H_kv, capacity, d_head) cache.
Tensor4 first(const Tensor4& t, std::size_t n) { return xt::view(t, xt::all(), xt::all(), xt::range(0, n), xt::all()); }
// The new token's row written at position `pos` of the cache.
void store(Tensor4& cache, const Tensor4& row, std::size_t pos) {
    xt::view(cache, xt::all(), xt::all(), xt::range(pos, pos + 1), xt::all()) = row;
}
}  // namespace

Tensor4 decode_step(Cache& cache, const Tensor3& tokens, const Project& project) {
    const std::size_t t = tokens.shape()[1] - 1;
    if (cache.length >= cache.k.shape()[2]) throw usage_error("the KV cache is full");
    const Projection p = project(tokens);  // all t + 1 tokens, every step
    for (std::size_t n = 0; n <= t; ++n) {
        store(cache.k, xt::view(p.k, xt::all(), xt::all(), xt::range(n, n + 1), xt::all()), n);
        store(cache.v, xt::view(p.v, xt::all(), xt::all(), xt::range(n, n + 1), xt::all()), n);
    }
    cache.length = t + 1;
    const Tensor4 q_new = xt::view(p.q, xt::all(), xt::all(), xt::range(t, t + 1), xt::all());
    return grouped_query_attention(q_new, first(cache.k, cache.length), first(cache.v, cache.length));
}

}  // namespace headwise::ex08
