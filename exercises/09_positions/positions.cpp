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
    // TODO(ex09): for every pair i = 0 .. d_head/2 - 1: theta_i = base^(-2i / d_head); its two
    // dimensions (a, b) are (i, i + d_head/2) in the half layout, (2i, 2i + 1) interleaved.
    // Token t sits at position first_position + t: rotate (x_a, x_b) by the angle position * theta_i
    // (lesson 09, steps 4 and 5).
    not_implemented_yet();
}

Tensor4 rope_append(RopeCache& cache, const Tensor4& q, const Tensor4& k, const Tensor4& v, double base,
                    Layout layout) {
    // TODO(ex09): new token i sits at position cache.length + i. Rotate k there (once: the cache
    // keeps it rotated), store it and v (not rotated) at those positions of the cache, add the new
    // tokens to cache.length, and return q rotated at the same positions (lesson 09, step 7).
    not_implemented_yet();
}

Tensor3 alibi_bias(std::size_t heads, std::size_t n_q, std::size_t n_k, std::size_t first_query) {
    // TODO(ex09): the slopes first: 2^(-8h/P) for h = 1 .. P, P the largest power of two <= H; if
    // H is not a power of two, add 2^(-8h/(2P)) for h = 1, 3, 5, ... until there are H (lesson 09,
    // step 6). Then bias(h, i, j) = -slope_h * (first_query + i - j) for j <= first_query + i, else 0.
    not_implemented_yet();
}

}  // namespace headwise::ex09
