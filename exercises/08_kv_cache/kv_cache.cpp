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
    // TODO(ex08): 1. refuse a full cache (cache.length == capacity) with headwise::usage_error.
    // 2. get the NEW token's q, k, v from `project` -- only the new token's (lesson 08, step 2).
    // 3. store its k and v at position cache.length and count it in cache.length.
    // 4. for every (b, h): softmax over the cached keys of K/V head h / (H / H_kv) of
    //    q . k / sqrt(d_head), then the weighted sum of that head's cached values (lesson 08, step 6).
    not_implemented_yet();
}

}  // namespace headwise::ex08
