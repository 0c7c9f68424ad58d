// kernels/occupancy.hpp -- how many blocks of a kernel one H100 SM (sm_90) holds at once, from what
// ptxas reports for it, and which resource runs out first.
//
// Per SM: 65536 registers, handed to warps in units of 256 (8 per thread); 228 KiB of shared
// memory, 1 KiB of it reserved per block; at most 64 warps and 32 blocks. Occupancy is the share of
// the 64 warp slots filled: the more warps, the more a scheduler can pick from while others wait
// for memory.
#pragma once

#include <string>

namespace headwise::kernels {

struct Occupancy {
    int blocks = 0, warps = 0;
    double share = 0.0;  // warps / 64
    std::string limit;   // "regs", "smem", "warps" or "blocks": the resource that runs out first
};

// For a block of `threads` threads, each using `registers`, and `shared_bytes` of static shared
// memory per block.
Occupancy occupancy_sm90(int registers, long long shared_bytes, int threads);

}  // namespace headwise::kernels
