// headwise/fast/fused_workspace.hpp -- the memory fused attention works in: each worker's tile
// scratch and the packed K^T and V of the AVX-512 path (thread_workspace, fused_attention.hpp).
// Internal to headwise::fast.
#pragma once

#include "headwise/fast/fused_attention.hpp"

#include <cstddef>
#include <vector>

namespace headwise::fast::detail {

// Keys per panel of packed K^T: the AVX-512 scores kernel reads 32 keys (two 16-float loads) per
// row of d_head.
inline constexpr std::size_t panel_keys = 32;

inline std::size_t round_to_panel(std::size_t n) { return (n + panel_keys - 1) / panel_keys * panel_keys; }

// Floats of one head's packed K^T (N_k rounded up to a panel, d_head); its packed V takes as many.
inline std::size_t packed_head_floats(const AttentionShape& s) { return s.d_head * round_to_panel(s.nk); }

// One worker's scratch for one tile at a time, kept from tile to tile.
struct TileScratch {
    std::vector<float> scores;  // (rows, keys of one block)
    std::vector<float> acc;     // (rows, d_head): running sum of exp(score - max) * v
    std::vector<float> max;     // (rows): running max of each row's scores
    std::vector<float> sum;     // (rows): running sum of exp(score - max)
};

}  // namespace headwise::fast::detail
