// kernels/mma.cuh -- tensor cores below wmma: mma.sync, ldmatrix, cp.async, swizzled tiles.
//
// One source for both compilers. Under nvcc every primitive is one PTX instruction (inline asm,
// sm_80 and later; on older GPUs the kernels that use them trap, and the launcher refuses them).
// Under g++ the same names are the emulator's (emulator/mma.hpp), which follows the PTX ISA's
// per-lane fragment layouts (emulator/fragment_layout.hpp) and checks what the hardware would
// not forgive: a lane missing from a warp-wide instruction, an unaligned row address, a read of a
// cp.async destination before the wait that covers it.
//
//   mma_m16n8k16<T>(d, a, b, c)          d = A B + C on a warp: A (16, 16), B (16, 8) in 16 bits
//                                        (T = __half or __nv_bfloat16), C, D (16, 8) in fp32
//   ldmatrix<Count, Trans>(d, tile, r, c), ldmatrix_x4[_trans](d, tile, r, c)
//                                        1, 2 or 4 8x8 16-bit matrices from shared memory; lanes
//                                        8 m .. 8 m + 7 give matrix m's rows as tile(r, c .. c + 7)
//   cp_async_16(tile, r, c, src, offset, valid)
//                                        16 bytes from global src[offset ..] into tile(r, c ..),
//                                        asynchronously; zeros when !valid
//   load_16(tile, r, c, src, offset, valid)
//                                        the same copy made by the thread itself (kernels/copy16.cuh)
//   cp_async_commit(), cp_async_wait<N>()
//                                        close a group of copies; wait for all but the newest N
//   swizzle<ChunksPerRow>(r, chunk)      where 16-byte chunk `chunk` of row r is stored
//   fast_exp2(x)                         2^x in one instruction (ex2.approx.ftz), results below
//                                        2^-126 flushed to 0
#pragma once

#include "kernels/copy16.cuh"
#include "kernels/portable.cuh"

#include <cmath>
#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__

namespace headwise::kernels {

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define HEADWISE_PTX_SM80 1
#else
#define HEADWISE_PTX_SM80 0
#endif

template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                                             const float (&c)[4]) {
#if HEADWISE_PTX_SM80
    if constexpr (std::is_same_v<T, __half>) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%10,%11,%12,%13};\n"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
              "f"(c[3]));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%10,%11,%12,%13};\n"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
              "f"(c[3]));
    }
#else
    __trap();
#endif
}

template <class Tile>
__device__ __forceinline__ unsigned shared_address(Tile& tile, int r, int c) {
    return static_cast<unsigned>(__cvta_generic_to_shared(tile.ptr(r, c)));
}

template <int Count, bool Trans, class Tile>
__device__ __forceinline__ void ldmatrix(std::uint32_t (&d)[Count], Tile& tile, int r, int c) {
    const unsigned at = shared_address(tile, r, c);
    if constexpr (Count == 1 && !Trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(d[0]) : "r"(at));
    else if constexpr (Count == 1)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(d[0]) : "r"(at));
    else if constexpr (Count == 2 && !Trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(d[0]), "=r"(d[1]) : "r"(at));
    else if constexpr (Count == 2)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                     : "=r"(d[0]), "=r"(d[1])
                     : "r"(at));
    else if constexpr (!Trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(at));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(at));
}

template <class T, class Tile>
__device__ __forceinline__ void cp_async_16(Tile& tile, int r, int c, const T* src, std::size_t offset, bool valid) {
#if HEADWISE_PTX_SM80
    const unsigned at = shared_address(tile, r, c);
    const int src_bytes = valid ? 16 : 0;  // 0: nothing is read, the 16 bytes are zero-filled
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(at), "l"(src + (valid ? offset : 0)),
                 "r"(src_bytes)
                 : "memory");
#else
    __trap();
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if HEADWISE_PTX_SM80
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if HEADWISE_PTX_SM80
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// 2^x on the special-function unit: one MUFU.EX2. exp2f adds a range test and a fix-up around it
// for results below 2^-126 (four instructions), which a softmax weight can do without: flushed to
// 0, it changes the row's sum by less than 2^-126. Relative error about 2^-22 (PTX ISA).
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// The shapes by name.
template <class Tile>
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&d)[4], Tile& tile, int r, int c) {
    ldmatrix<4, false>(d, tile, r, c);
}
template <class Tile>
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&d)[4], Tile& tile, int r, int c) {
    ldmatrix<4, true>(d, tile, r, c);
}

// The raw bits of a 16-bit float.
__device__ __forceinline__ std::uint32_t bits_of(__half x) { return __half_as_ushort(x); }
__device__ __forceinline__ std::uint32_t bits_of(__nv_bfloat16 x) { return __bfloat16_as_ushort(x); }

}  // namespace headwise::kernels

#else

namespace headwise::kernels {
using emulator::cp_async_16;
using emulator::cp_async_commit;
using emulator::cp_async_wait;
using emulator::ldmatrix;
using emulator::ldmatrix_x4;
using emulator::ldmatrix_x4_trans;
using emulator::mma_m16n8k16;

// The emulator's fast_exp2: 2^x, flushed to 0 below 2^-126 as the hardware's .ftz does.
inline float fast_exp2(float x) {
    const float y = std::exp2(x);
    return y < 0x1p-126f ? 0.0f : y;
}

inline std::uint32_t bits_of(__half x) { return x.bits; }
inline std::uint32_t bits_of(__nv_bfloat16 x) { return x.bits; }
}  // namespace headwise::kernels

#endif

namespace headwise::kernels {

// Two floats rounded to T (round to nearest even) in one register, x in the low half: the
// operand layout of mma_m16n8k16, element i in half i % 2.
template <class T>
__device__ __forceinline__ std::uint32_t pack(float x, float y) {
    return bits_of(T(x)) | (bits_of(T(y)) << 16);
}

// XOR swizzle of 16-byte chunks: chunk `chunk` of row r is stored at chunk chunk ^ (r % 8). An
// ldmatrix phase reads one logical chunk of 8 consecutive rows; unswizzled, with rows a multiple
// of 128 bytes long, all 8 sit in the same 4 banks (8-way conflict); swizzled, in 8 different ones.
// r >= 0: r & 7 is r % 8 without the sign fix-up nvcc emits for a signed %, and lets it see that
// rows 8 apart share a swizzle.
template <int ChunksPerRow>
__device__ __forceinline__ int swizzle(int r, int chunk) {
    static_assert(ChunksPerRow % 8 == 0, "the swizzle permutes groups of 8 chunks (128 bytes)");
    return chunk ^ (r & 7);
}

}  // namespace headwise::kernels
