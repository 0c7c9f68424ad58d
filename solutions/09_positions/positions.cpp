// Exercise 09 -- RoPE at given positions in both layouts, with a KV cache, and the ALiBi bias.
//
// Read lesson 09 first (./headwise run 9, lessons/09_positions.cpp, docs/09_positions.md).
// Grade with:  ./headwise grade 9    (or: ctest --preset grade -L ex09)
// Stuck? ./headwise hint 9 shows one hint at a time (exercises/09_positions/HINTS.md).
//
// Tensor4 t(b, h, n, c) reads or writes one entry; t.shape()[i] is a size;
// Tensor4::from_shape({B, H, N, D}) makes one (uninitialised). std::pow, std::cos, std::sin in <cmath>.
#include "positions.hpp"

#include <cmath>
#include <vector>

namespace headwise::ex09 {

Tensor4 apply_rope(const Tensor4& x, std::size_t first_position, double base, Layout layout) {
    // BEGIN SOLUTION
    const std::size_t batch = x.shape()[0], heads = x.shape()[1], n = x.shape()[2], d_head = x.shape()[3];
    Tensor4 y = Tensor4::from_shape(x.shape());
    for (std::size_t i = 0; i < d_head / 2; ++i) {
        const double theta = std::pow(base, -2.0 * double(i) / double(d_head));
        // The two dimensions pair i rotates together.
        const std::size_t a = layout == Layout::interleaved ? 2 * i : i;
        const std::size_t b = layout == Layout::interleaved ? 2 * i + 1 : i + d_head / 2;
        for (std::size_t t = 0; t < n; ++t) {
            const double angle = double(first_position + t) * theta;
            const double c = std::cos(angle), s = std::sin(angle);
            for (std::size_t bi = 0; bi < batch; ++bi)
                for (std::size_t h = 0; h < heads; ++h) {
                    const double xa = x(bi, h, t, a), xb = x(bi, h, t, b);
                    y(bi, h, t, a) = static_cast<float>(xa * c - xb * s);
                    y(bi, h, t, b) = static_cast<float>(xb * c + xa * s);
                }
        }
    }
    return y;
    // STUB
    // TODO(ex09): for every pair i = 0 .. d_head/2 - 1: theta_i = base^(-2i / d_head); its two
    // dimensions (a, b) are (i, i + d_head/2) in the half layout, (2i, 2i + 1) interleaved.
    // Token t sits at position first_position + t: rotate (x_a, x_b) by the angle position * theta_i
    // (lesson 09, steps 4 and 5).
    not_implemented_yet();
    // END SOLUTION
}

Tensor4 rope_append(RopeCache& cache, const Tensor4& q, const Tensor4& k, const Tensor4& v, double base,
                    Layout layout) {
    // BEGIN SOLUTION
    const std::size_t start = cache.length;  // new token i sits at position start + i
    const Tensor4 k_rotated = apply_rope(k, start, base, layout);
    const std::size_t batch = k.shape()[0], kv_heads = k.shape()[1], n = k.shape()[2], d_head = k.shape()[3];
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t h = 0; h < kv_heads; ++h)
            for (std::size_t t = 0; t < n; ++t)
                for (std::size_t c = 0; c < d_head; ++c) {
                    cache.k(b, h, start + t, c) = k_rotated(b, h, t, c);
                    cache.v(b, h, start + t, c) = v(b, h, t, c);  // values carry content: never rotated
                }
    cache.length = start + n;
    return apply_rope(q, start, base, layout);
    // STUB
    // TODO(ex09): new token i sits at position cache.length + i. Rotate k there (once: the cache
    // keeps it rotated), store it and v (not rotated) at those positions of the cache, add the new
    // tokens to cache.length, and return q rotated at the same positions (lesson 09, step 7).
    not_implemented_yet();
    // END SOLUTION
}

Tensor3 alibi_bias(std::size_t heads, std::size_t n_q, std::size_t n_k, std::size_t first_query) {
    // BEGIN SOLUTION
    // The largest power of two P <= H gets 2^(-8h/P); the rest are every other slope of 2P.
    std::size_t p = 1;
    while (2 * p <= heads) p *= 2;
    std::vector<double> slopes;
    for (std::size_t h = 1; h <= p; ++h) slopes.push_back(std::exp2(-8.0 * double(h) / double(p)));
    for (std::size_t h = 1; slopes.size() < heads; h += 2)
        slopes.push_back(std::exp2(-8.0 * double(h) / double(2 * p)));
    Tensor3 bias = Tensor3::from_shape({heads, n_q, n_k});
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < n_q; ++i)
            for (std::size_t j = 0; j < n_k; ++j) {
                const std::size_t query = first_query + i;
                bias(h, i, j) = j <= query ? static_cast<float>(-slopes[h] * double(query - j)) : 0.0f;
            }
    return bias;
    // STUB
    // TODO(ex09): the slopes first: 2^(-8h/P) for h = 1 .. P, P the largest power of two <= H; if
    // H is not a power of two, add 2^(-8h/(2P)) for h = 1, 3, 5, ... until there are H (lesson 09,
    // step 6). Then bias(h, i, j) = -slope_h * (first_query + i - j) for j <= first_query + i, else 0.
    not_implemented_yet();
    // END SOLUTION
}

}  // namespace headwise::ex09
