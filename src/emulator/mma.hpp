// emulator/mma.hpp -- the PTX tensor-core primitives for g++, included by emulator.hpp.
//
// kernels/mma.cuh issues these as inline PTX on a GPU; here each is what the PTX ISA says it
// does, lane by lane:
//
//   mma_m16n8k16<T>(d, a, b, c)     mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}x2.f32
//                                   d = A B + C for A (16, 16), B (16, 8), C and D (16, 8) fp32,
//                                   each spread over the warp's 32 lanes as emulator/fragment_layout.hpp
//                                   says (a: 4 registers of two 16-bit halves, b: 2, c and d: 4 floats)
//   ldmatrix<Count, Trans>(d, tile, r, c)
//                                   ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: lanes
//                                   8 m .. 8 m + 7 give the rows (tile(r, c .. c + 7)) of matrix m,
//                                   each lane receives register m of every matrix
//   cp_async_16(tile, r, c, src, offset, valid)
//                                   cp.async.cg.shared.global, 16 bytes (src-size 0 when !valid:
//                                   the destination is zero-filled and global memory is not read)
//   cp_async_commit()               cp.async.commit_group
//   cp_async_wait<N>()              cp.async.wait_group N
//
// mma and ldmatrix are warp collectives with the full mask, like wmma: all 32 lanes must reach
// the same line with the same tile and shape, or the launch stops naming the line. Each lane
// leaves its registers (or its row address) in the warp's scratch; the lane that completes the
// meeting computes every lane's result; each lane then takes its own. The arithmetic of mma is
// wmma's (emulator/wmma.hpp): products of 16-bit values are exact in fp32, the 16 of each output
// are added to C in k order in fp32 (the hardware's order is unspecified: a GPU agrees to within
// fp32 rounding of a 16-term sum). ldmatrix is counted in the bank model as one request per 8 x 8
// matrix (8 rows of 16 bytes, as the hardware serves it) and each lane's row is race-checked.
//
// cp.async: the 16 bytes are read from global memory at the call (counted as its 16 / sizeof(T)
// element loads), and land in shared memory only when the issuing thread runs a cp.async.wait_group that
// covers the copy's group. Until then the destination is pending: any read or write of it -- by
// any thread, the issuing one included -- stops the launch naming both lines. After the wait the
// elements count as written by that thread at the wait: other threads need a __syncthreads()
// before they read them, which the race check enforces as for any write.
#pragma once

#include "emulator/fragment_layout.hpp"

#include <cstdint>
#include <cstring>
#include <source_location>
#include <string>
#include <type_traits>

namespace headwise::emulator {

namespace machine {

[[noreturn]] void bad_primitive(const char* what, const std::string& why, const std::source_location& where);

template <class T>
float sixteen_to_float(std::uint16_t bits) {
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "16-bit inputs: __half or bf16");
    if constexpr (std::is_same_v<T, __half>)
        return half_bits_to_float(bits);
    else
        return bfloat16_bits_to_float(bits);
}

// Half i (0 = low) of a register of two 16-bit values.
inline std::uint16_t half_of(std::uint32_t reg, int i) { return std::uint16_t(reg >> (16 * i)); }

inline std::uint64_t meet_all(const char* what, std::uint64_t check, const std::source_location& where) {
    return warp_collective({what, WarpOp::wmma, 0xffffffffu, 0, -1, check, where}).sequence;
}

}  // namespace machine

// d = a b + c, one m16n8k16 tile product by the whole warp (fragments as in fragment_layout.hpp).
template <class T>
void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2], const float (&c)[4],
                  std::source_location where = std::source_location::current()) {
    using namespace machine;
    const char* what = std::is_same_v<T, __half> ? "mma.sync.m16n8k16.f16" : "mma.sync.m16n8k16.bf16";
    const unsigned lane = lane_id();
    WarpScratch& s = warp_scratch(where);
    for (int i = 0; i < 4; ++i) s.in[lane][i] = a[i], std::memcpy(&s.in[lane][6 + i], &c[i], 4);
    s.in[lane][4] = b[0], s.in[lane][5] = b[1];
    const std::uint64_t sequence = meet_all(what, std::is_same_v<T, __half> ? 1 : 2, where);
    if (s.sequence != sequence) {  // the first lane through computes the warp's product
        float A[16][16], B[16][8], C[16][8];
        for (int l = 0; l < 32; ++l) {
            for (int i = 0; i < 8; ++i) {
                const layout::Element e = layout::mma_a(l, i);
                A[e.row][e.col] = sixteen_to_float<T>(half_of(s.in[l][i / 2], i % 2));
            }
            for (int i = 0; i < 4; ++i) {
                const layout::Element e = layout::mma_b(l, i);
                B[e.row][e.col] = sixteen_to_float<T>(half_of(s.in[l][4 + i / 2], i % 2));
                const layout::Element f = layout::mma_c(l, i);
                std::memcpy(&C[f.row][f.col], &s.in[l][6 + i], 4);
            }
        }
        for (int l = 0; l < 32; ++l)
            for (int i = 0; i < 4; ++i) {
                const layout::Element e = layout::mma_c(l, i);
                float sum = C[e.row][e.col];
                for (int k = 0; k < 16; ++k) sum += A[e.row][k] * B[k][e.col];
                std::memcpy(&s.out[l][i], &sum, 4);
            }
        s.sequence = sequence;
    }
    for (int i = 0; i < 4; ++i) std::memcpy(&d[i], &s.out[lane][i], 4);
}

// ldmatrix.m8n8.x{Count}[.trans]: this lane's row address is tile(r, c .. c + 7) (used when
// lane < 8 Count); d[m] receives this lane's two elements of matrix m.
template <int Count, bool Trans, class T, int Rows, int Cols>
void ldmatrix(std::uint32_t (&d)[Count], shared_tile<T, Rows, Cols>& tile, int r, int c,
              std::source_location where = std::source_location::current()) {
    static_assert(Count == 1 || Count == 2 || Count == 4, "ldmatrix loads 1, 2 or 4 matrices");
    static_assert(sizeof(T) == 2, "ldmatrix .b16 loads 16-bit elements");
    using namespace machine;
    const char* what = Count == 1   ? (Trans ? "ldmatrix.x1.trans" : "ldmatrix.x1")
                       : Count == 2 ? (Trans ? "ldmatrix.x2.trans" : "ldmatrix.x2")
                                    : (Trans ? "ldmatrix.x4.trans" : "ldmatrix.x4");
    const unsigned lane = lane_id();
    const bool gives_row = lane < 8u * Count;
    if (gives_row) {
        if (r < 0 || r >= Rows || c < 0 || c + 8 > Cols) shared_out_of_bounds(r, c + 7, Rows, Cols, where);
        if ((std::size_t(r) * Cols + std::size_t(c)) * sizeof(T) % 16 != 0)
            bad_primitive(
                what,
                "the row address of (" + std::to_string(r) + ", " + std::to_string(c) + ") is not 16-byte aligned",
                where);
    }
    WarpScratch& s = warp_scratch(where);
    s.in[lane][0] = std::uint32_t(r), s.in[lane][1] = std::uint32_t(c);
    const std::uint64_t check = reinterpret_cast<std::uintptr_t>(&tile) * 8 + Count * 2 + Trans;
    const std::uint64_t sequence = meet_all(what, check, where);
    if (s.sequence != sequence) {
        for (int mat = 0; mat < Count; ++mat) {
            std::uint32_t words[32];
            for (int j = 0; j < 8; ++j) {  // row j of matrix mat, from lane 8 mat + j
                const int rr = int(s.in[8 * mat + j][0]), cc = int(s.in[8 * mat + j][1]);
                const std::uint32_t first = std::uint32_t((std::size_t(rr) * Cols + std::size_t(cc)) * sizeof(T) / 4);
                for (int w = 0; w < 4; ++w) words[4 * j + w] = first + std::uint32_t(w);
            }
            shared_request(words, 32, 8);
            for (int l = 0; l < 32; ++l) {
                std::uint32_t reg = 0;
                for (int i = 0; i < 2; ++i) {
                    const layout::Element e = layout::ldmatrix(l, i, Trans);
                    const int rr = int(s.in[8 * mat + e.row][0]), cc = int(s.in[8 * mat + e.row][1]) + e.col;
                    std::uint16_t bits;
                    std::memcpy(&bits, &tile.data[rr][cc], 2);
                    reg |= std::uint32_t(bits) << (16 * i);
                }
                s.out[l][mat] = reg;
            }
        }
        s.sequence = sequence;
    }
    for (int mat = 0; mat < Count; ++mat) d[mat] = s.out[lane][mat];
    if (gives_row)
        for (int e = 0; e < 8; ++e) shared_read(tile.words[r][c + e], r, c + e, where);
}

// The shapes by name (kernels/mma.cuh), the call site passed on so errors name the kernel's line.
template <class Tile>
void ldmatrix_x4(std::uint32_t (&d)[4], Tile& tile, int r, int c,
                 std::source_location where = std::source_location::current()) {
    ldmatrix<4, false>(d, tile, r, c, where);
}
template <class Tile>
void ldmatrix_x4_trans(std::uint32_t (&d)[4], Tile& tile, int r, int c,
                       std::source_location where = std::source_location::current()) {
    ldmatrix<4, true>(d, tile, r, c, where);
}

// cp.async.cg.shared.global, 16 bytes: src[offset .. offset + 16 / sizeof(T)) into
// tile(r, c .. ), or zeros (and no global read) when !valid.
template <class T, int Rows, int Cols>
void cp_async_16(shared_tile<T, Rows, Cols>& tile, int r, int c, global_ptr<const T> src, std::size_t offset,
                 bool valid, std::source_location where = std::source_location::current()) {
    using namespace machine;
    constexpr int count = int(16 / sizeof(T));
    if (r < 0 || r >= Rows || c < 0 || c + count > Cols) shared_out_of_bounds(r, c + count - 1, Rows, Cols, where);
    if ((std::size_t(r) * Cols + std::size_t(c)) * sizeof(T) % 16 != 0)
        bad_primitive(
            "cp.async",
            "the shared destination (" + std::to_string(r) + ", " + std::to_string(c) + ") is not 16-byte aligned",
            where);
    AsyncState& state = async_state();
    if (state.pending == int(sizeof(state.copies) / sizeof(state.copies[0])))
        bad_primitive("cp.async", "more than 64 copies of one thread are pending (is a cp.async.wait_group missing?)",
                      where);
    AsyncCopy& copy = state.copies[state.pending];
    copy.dst = reinterpret_cast<unsigned char*>(&tile.data[r][c]);
    copy.words = &tile.words[r][c];
    copy.count = count, copy.r = r, copy.c = c, copy.group = -1;
    std::memset(copy.data, 0, 16);
    if (valid) {
        if (offset > src.size() || src.size() - offset < std::size_t(count))
            out_of_bounds(true, std::ptrdiff_t(offset + count - 1), src.size());
        if (reinterpret_cast<std::uintptr_t>(src.get() + offset) % 16 != 0)
            bad_primitive("cp.async", "the global source is not 16-byte aligned", where);
        std::memcpy(copy.data, src.get() + offset, 16);
        traffic.loads += std::uint64_t(count);  // element loads, as everywhere else in the count
        traffic.load_bytes += 16;
    }
    async_issue(copy.words, count, r, c, where);
    ++state.pending;
}

// cp.async.commit_group: the calling thread's uncommitted copies form its next group.
inline void cp_async_commit(std::source_location = std::source_location::current()) {
    machine::AsyncState& state = machine::async_state();
    for (int n = 0; n < state.pending; ++n)
        if (state.copies[n].group < 0) state.copies[n].group = state.committed;
    ++state.committed;
}

// cp.async.wait_group N: every committed group but the newest N has landed.
template <int N>
void cp_async_wait(std::source_location where = std::source_location::current()) {
    machine::AsyncState& state = machine::async_state();
    int kept = 0;
    for (int n = 0; n < state.pending; ++n) {
        const machine::AsyncCopy& copy = state.copies[n];
        if (copy.group >= 0 && copy.group < state.committed - N)
            machine::async_complete(copy, where);
        else
            state.copies[kept++] = copy;
    }
    state.pending = kept;
}

}  // namespace headwise::emulator
