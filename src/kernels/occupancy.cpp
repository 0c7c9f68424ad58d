#include "kernels/occupancy.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace headwise::kernels {

Occupancy occupancy_sm90(int registers, long long shared_bytes, int threads) {
    const int warps = (threads + 31) / 32;
    const int regs_per_warp = (std::max(registers, 1) * 32 + 255) / 256 * 256;
    const std::array<std::pair<int, const char*>, 4> limits{{{65536 / (regs_per_warp * warps), "regs"},
                                                             {int(233472 / (shared_bytes + 1024)), "smem"},
                                                             {64 / warps, "warps"},
                                                             {32, "blocks"}}};
    const auto least = *std::min_element(limits.begin(), limits.end());
    return {least.first, least.first * warps, least.first * warps / 64.0, least.second};
}

}  // namespace headwise::kernels
