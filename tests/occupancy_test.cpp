// kernels/occupancy.hpp: blocks per H100 SM from registers, shared memory and block size, against
// cases worked by hand from the sm_90 limits (65536 registers in warp units of 256, 228 KiB of
// shared memory plus 1 KiB reserved per block, 64 warps, 32 blocks).
#include "kernels/occupancy.hpp"

#include <catch2/catch.hpp>

using headwise::kernels::occupancy_sm90;

TEST_CASE("occupancy: 128 registers at 128 threads fill a quarter of the SM", "[occupancy]") {
    // 128 x 32 = 4096 registers a warp, 4 warps a block: 65536 / 16384 = 4 blocks, 16 warps.
    const auto o = occupancy_sm90(128, 0, 128);
    CHECK(o.blocks == 4);
    CHECK(o.warps == 16);
    CHECK(o.share == 0.25);
    CHECK(o.limit == "regs");
}

TEST_CASE("occupancy: registers are handed out 256 at a time per warp", "[occupancy]") {
    // 170 x 32 = 5440, rounded up to 5632: 65536 / (5632 x 4) = 2.9, so 2 blocks; 168 would be 5376 -> 3.
    CHECK(occupancy_sm90(170, 0, 128).blocks == 2);
    CHECK(occupancy_sm90(168, 0, 128).blocks == 3);
    // 33 registers take 1280 a warp, not 1056: 8 warps a block -> 6 blocks, where 32 give 8.
    CHECK(occupancy_sm90(33, 0, 256).blocks == 6);
    CHECK(occupancy_sm90(32, 0, 256).blocks == 8);
}

TEST_CASE("occupancy: shared memory limits a block of 48 KiB to 4 per SM", "[occupancy]") {
    // 233472 / (49152 + 1024) = 4.65: 4 blocks of 4 warps.
    const auto o = occupancy_sm90(32, 48 * 1024, 128);
    CHECK(o.blocks == 4);
    CHECK(o.warps == 16);
    CHECK(o.limit == "smem");
}

TEST_CASE("occupancy: warp slots and the block count limit small kernels", "[occupancy]") {
    // 1024 threads = 32 warps: only 2 blocks fit 64 warp slots, a full SM.
    const auto wide = occupancy_sm90(16, 0, 1024);
    CHECK(wide.blocks == 2);
    CHECK(wide.share == 1.0);
    CHECK(wide.limit == "warps");
    // One warp a block: 32 blocks at most, half the warp slots.
    const auto narrow = occupancy_sm90(16, 0, 32);
    CHECK(narrow.blocks == 32);
    CHECK(narrow.share == 0.5);
    CHECK(narrow.limit == "blocks");
}
