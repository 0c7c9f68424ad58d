// mistake: K and V swapped
// The new token's k went into cache.v and its v into cache.k: scores are taken against values and keys are averaged.
// Keys are what queries are compared with (q . k), values what the weights average: cache.k gets k, cache.v gets v.
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
    const Projection p = project(xt::view(tokens, xt::all(), xt::range(t, t + 1), xt::all()));
    store(cache.k, p.v, cache.length);  // swapped
    store(cache.v, p.k, cache.length);
    ++cache.length;
    return grouped_query_attention(p.q, first(cache.k, cache.length), first(cache.v, cache.length));
}

}  // namespace headwise::ex08
