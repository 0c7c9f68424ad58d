// Exercise 08 -- one decode step with a grouped-query KV cache.
//
// Read lesson 08 first (./headwise run 8, lessons/08_kv_cache.cpp, docs/08_kv_cache.md).
// Grade with:  ./headwise grade 8    (or: ctest --preset grade -L ex08)
// Stuck? ./headwise hint 8 shows one hint at a time (exercises/08_kv_cache/HINTS.md).
//
// Tensor4 t(b, h, n, c) reads or writes one entry; t.shape()[i] is a size. xt::view(x, xt::all(),
// xt::range(a, b), xt::all()) is tokens a .. b - 1 of a (B, N, d_model) tensor (assign it to a
// Tensor3 to get a copy).
#include "kv_cache.hpp"

#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace headwise::ex08 {

Tensor4 decode_step(Cache& cache, const Tensor3& tokens, const Project& project) {
    // BEGIN SOLUTION
    const std::size_t t = tokens.shape()[1] - 1;  // the new token's position
    const std::size_t capacity = cache.k.shape()[2];
    if (cache.length >= capacity) {
        throw usage_error("the KV cache is full: it holds " + std::to_string(capacity) + " tokens");
    }
    // Project the new token only: the cache already holds every earlier token's k and v.
    const Tensor3 x_new = xt::view(tokens, xt::all(), xt::range(t, t + 1), xt::all());  // (B, 1, d_model)
    const Projection p = project(x_new);  // q (B, H, 1, d_head), k and v (B, H_kv, 1, d_head)
    const std::size_t batch = p.q.shape()[0], heads = p.q.shape()[1], d_head = p.q.shape()[3];
    const std::size_t kv_heads = p.k.shape()[1], group = heads / kv_heads;

    // Append first, so that the new token attends to itself too.
    const std::size_t pos = cache.length;
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < kv_heads; ++h)
            for (std::size_t c = 0; c < d_head; ++c) {
                cache.k(b, h, pos, c) = p.k(b, h, 0, c);
                cache.v(b, h, pos, c) = p.v(b, h, 0, c);
            }
    cache.length = pos + 1;
    const std::size_t n = cache.length;  // keys to attend to: every one is in the past, nothing to mask

    const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
    Tensor4 out = Tensor4::from_shape({batch, heads, 1, d_head});
    std::vector<float> w(n);
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < heads; ++h) {
            const std::size_t kv = h / group;  // query heads h = kv*g .. kv*g + g - 1 share K/V head kv
            float m = -INFINITY;
            for (std::size_t j = 0; j < n; ++j) {
                float dot = 0.0f;
                for (std::size_t c = 0; c < d_head; ++c) dot += p.q(b, h, 0, c) * cache.k(b, kv, j, c);
                w[j] = dot * scale;
                m = std::max(m, w[j]);
            }
            float sum = 0.0f;
            for (std::size_t j = 0; j < n; ++j) {
                w[j] = std::exp(w[j] - m);
                sum += w[j];
            }
            for (std::size_t j = 0; j < n; ++j) w[j] /= sum;
            for (std::size_t c = 0; c < d_head; ++c) {
                float acc = 0.0f;
                for (std::size_t j = 0; j < n; ++j) acc += w[j] * cache.v(b, kv, j, c);
                out(b, h, 0, c) = acc;
            }
        }
    return out;
    // STUB
    // TODO(ex08): 1. refuse a full cache (cache.length == capacity) with headwise::usage_error.
    // 2. get the NEW token's q, k, v from `project` -- only the new token's (lesson 08, step 2).
    // 3. store its k and v at position cache.length and count it in cache.length.
    // 4. for every (b, h): softmax over the cached keys of K/V head h / (H / H_kv) of
    //    q . k / sqrt(d_head), then the weighted sum of that head's cached values (lesson 08, step 6).
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex08
