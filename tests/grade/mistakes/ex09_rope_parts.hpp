// The parts the exercise 09 mistakes share: RoPE, the cache and the ALiBi bias built from the
// library's pieces (headwise/reference/positions.hpp), with a switch for each catalogued mistake
// (each ex09_*.cpp turns exactly one on). Not a mistake file itself (the catalogue collects
// ex09_*.cpp only).
#pragma once

#include "positions.hpp"

#include "headwise/reference/positions.hpp"

#include <cmath>

namespace headwise::ex09::parts {

struct Wrong {
    bool layouts_swapped = false;    // half pairs (2i, 2i + 1), interleaved pairs (i, i + d/2)
    bool theta_i_over_d = false;     // theta_i = base^(-i / d_head): sqrt(base) in place of base
    bool from_one = false;           // token n at position first_position + n + 1
    bool v_rotated = false;          // the cache stores v rotated like k
    bool keys_at_zero = false;       // new keys rotated from position 0, not from cache.length
    bool query_at_start = false;     // the new queries rotated from position 0, the cache's start
    bool power_of_two_rule = false;  // ALiBi slopes 2^(-8h/H) for every H
};

inline Tensor4 rope(const Tensor4& x, std::size_t first, double base, Layout layout, const Wrong& w) {
    const bool half = (layout == Layout::half) != w.layouts_swapped;
    return headwise::apply_rope(
        x, Rope{w.theta_i_over_d ? std::sqrt(base) : base, half ? RopeLayout::half : RopeLayout::interleaved},
        first + (w.from_one ? 1 : 0));
}

inline Tensor4 append(RopeCache& cache, const Tensor4& q, const Tensor4& k, const Tensor4& v, double base,
                      Layout layout, const Wrong& w) {
    const std::size_t start = cache.length, n = k.shape()[2];
    const auto at = [&](Tensor4& c, const Tensor4& x) {
        xt::view(c, xt::all(), xt::all(), xt::range(start, start + n), xt::all()) = x;
    };
    at(cache.k, rope(k, w.keys_at_zero ? 0 : start, base, layout, w));
    at(cache.v, w.v_rotated ? rope(v, start, base, layout, w) : v);
    cache.length = start + n;
    return rope(q, w.query_at_start ? 0 : start, base, layout, w);
}

inline Tensor3 alibi(std::size_t heads, std::size_t n_q, std::size_t n_k, std::size_t first_query, const Wrong& w) {
    std::vector<double> slopes = alibi_slopes(heads);
    if (w.power_of_two_rule)
        for (std::size_t h = 0; h < heads; ++h) slopes[h] = std::exp2(-8.0 * double(h + 1) / double(heads));
    Tensor3 bias = Tensor3::from_shape({heads, n_q, n_k});
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < n_q; ++i)
            for (std::size_t j = 0; j < n_k; ++j)
                bias(h, i, j) = j <= first_query + i ? float(-slopes[h] * double(first_query + i - j)) : 0.0f;
    return bias;
}

}  // namespace headwise::ex09::parts

// The three functions of the exercise with the mistake `w` switched on.
#define HEADWISE_EX09_WITH(w)                                                                                \
    namespace headwise::ex09 {                                                                               \
    Tensor4 apply_rope(const Tensor4& x, std::size_t first_position, double base, Layout layout) {           \
        return parts::rope(x, first_position, base, layout, w);                                              \
    }                                                                                                        \
    Tensor4 rope_append(RopeCache& cache, const Tensor4& q, const Tensor4& k, const Tensor4& v, double base, \
                        Layout layout) {                                                                     \
        return parts::append(cache, q, k, v, base, layout, w);                                               \
    }                                                                                                        \
    Tensor3 alibi_bias(std::size_t heads, std::size_t n_q, std::size_t n_k, std::size_t first_query) {       \
        return parts::alibi(heads, n_q, n_k, first_query, w);                                                \
    }                                                                                                        \
    }
