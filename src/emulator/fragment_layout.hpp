// emulator/fragment_layout.hpp -- which lane of a warp holds which element of an mma.sync tile.
//
// The PTX ISA fixes, for `mma.sync.aligned.m16n8k16` with 16-bit inputs and fp32 accumulators,
// where every element of A (16 x 16), B (16 x 8) and C/D (16 x 8) lives: in which lane, in which
// of its registers, in which half of a register. With
//   group = lane / 4    (0..7, "groupID")        quad = lane % 4    (0..3, "threadID_in_group")
// element i of a lane's fragment sits at
//   A  i = 0..7 (4 registers of two 16-bit halves, element i in register i / 2, half i % 2):
//        row = group + 8 * (i / 2 % 2),     col = 2 quad + i % 2 + 8 * (i / 4)
//   B  i = 0..3 (2 registers):              row = 2 quad + i % 2 + 8 * (i / 2),  col = group
//   C  i = 0..3 (4 fp32 registers):         row = group + 8 * (i / 2),           col = 2 quad + i % 2
// And `ldmatrix.m8n8` (an 8 x 8 matrix of 16-bit elements per register): lane l receives elements
// i = 0, 1 of row l / 4, columns 2 (l % 4) + i -- or, with .trans, rows 2 (l % 4) + i of column
// l / 4. Rows of matrix m come from the addresses lanes 8 m .. 8 m + 7 give.
//
// Plain C++: the emulator's mma.sync and ldmatrix (emulator/mma.hpp) place elements with these
// functions, the tests check products made with them, and lesson 06 prints them.
#pragma once

namespace headwise::emulator::layout {

struct Element {
    int row, col;
};

constexpr int group(int lane) { return lane / 4; }
constexpr int quad(int lane) { return lane % 4; }

// Element i (0..7) of the A fragment of `lane`, in the (16, 16) A tile.
constexpr Element mma_a(int lane, int i) {
    return {group(lane) + 8 * (i / 2 % 2), 2 * quad(lane) + i % 2 + 8 * (i / 4)};
}
// Element i (0..3) of the B fragment of `lane`, in the (16, 8) B tile (row = k, col = n).
constexpr Element mma_b(int lane, int i) { return {2 * quad(lane) + i % 2 + 8 * (i / 2), group(lane)}; }
// Element i (0..3) of the C (and D) fragment of `lane`, in the (16, 8) accumulator tile.
constexpr Element mma_c(int lane, int i) { return {group(lane) + 8 * (i / 2), 2 * quad(lane) + i % 2}; }
// Element i (0, 1) of what `lane` receives from one 8 x 8 matrix of an ldmatrix.
constexpr Element ldmatrix(int lane, int i, bool trans) {
    return trans ? Element{2 * quad(lane) + i, group(lane)} : Element{group(lane), 2 * quad(lane) + i};
}

}  // namespace headwise::emulator::layout
