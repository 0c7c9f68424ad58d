// emulator/half.hpp -- __half and __nv_bfloat16 for g++, bit for bit what CUDA computes.
//
// A 16-bit float is the top of a 32-bit one with fewer bits kept:
//   fp16  (__half)          1 sign, 5 exponent (bias 15), 10 mantissa: max 65504, eps 2^-10
//   bf16  (__nv_bfloat16)   1 sign, 8 exponent (bias 127), 7 mantissa: fp32's range, eps 2^-7
// float -> 16 bits rounds to nearest, ties to even (CUDA's __float2half_rn, __float2bfloat16_rn):
// the bits that do not fit are dropped, and the kept part goes up by one ulp when what was dropped
// is more than half an ulp, or exactly half and the kept part is odd. Going up can carry into the
// exponent, and from the largest finite value into infinity. fp16 has subnormals below 2^-14
// (steps of 2^-24); a float below half of 2^-24 becomes zero. Every NaN becomes 0x7fff, as CUDA's
// conversions give. 16 bits -> float is exact.
//
// Plain C++ without the CUDA macros: host code (the tests, the fp16 kernel's launcher) uses it too.
// Under nvcc the kernels get CUDA's own <cuda_fp16.h> / <cuda_bf16.h> instead (kernels/portable.cuh).
#pragma once

#ifdef __CUDACC__
#error "emulator/half.hpp is for g++ builds; nvcc has <cuda_fp16.h>"
#endif

#include <cstdint>
#include <cstring>

struct __half {
    std::uint16_t bits = 0;  // the raw pattern: sign, 5 exponent bits, 10 mantissa bits
    __half() = default;
    inline __half(float f);  // rounds to nearest even
    inline operator float() const;
};

struct __nv_bfloat16 {
    std::uint16_t bits = 0;  // sign, 8 exponent bits, 7 mantissa bits
    __nv_bfloat16() = default;
    inline __nv_bfloat16(float f);
    inline operator float() const;
};

namespace headwise::emulator::machine {

inline std::uint32_t float_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
inline float bits_float(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// `kept` after dropping `dropped` low bits whose value was `rest` (0 .. 2^dropped - 1): up by one
// when rest is above half, or exactly half with `kept` odd.
inline std::uint32_t round_nearest_even(std::uint32_t kept, std::uint32_t rest, unsigned dropped) {
    const std::uint32_t half = std::uint32_t(1) << (dropped - 1);
    return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

inline std::uint16_t float_to_half_bits(float f) {
    const std::uint32_t u = float_bits(f);
    const std::uint32_t sign = (u >> 16) & 0x8000u;
    const std::uint32_t mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) return 0x7fff;                          // NaN
    if (mag == 0x7f800000u) return std::uint16_t(sign | 0x7c00u);  // +-inf
    const int exponent = int(mag >> 23) - 127;                     // unbiased
    std::uint32_t mantissa = mag & 0x7fffffu;
    if (exponent >= -14) {
        // A normal fp16 (or one that rounds up to infinity): rebias 127 -> 15, drop 13 bits.
        // The carry out of the mantissa lands in the exponent, as it should; an exponent past
        // 15 saturates to the infinity pattern 0x7c00.
        if (exponent > 15) return std::uint16_t(sign | 0x7c00u);
        const std::uint32_t kept = (std::uint32_t(exponent + 15) << 10) | (mantissa >> 13);
        const std::uint32_t r = round_nearest_even(kept, mantissa & 0x1fffu, 13);
        return std::uint16_t(sign | (r >= 0x7c00u ? 0x7c00u : r));
    }
    // Subnormal fp16: value = m * 2^-24 with m < 1024. The float is (2^23 + mantissa) * 2^(e-23),
    // so m = (2^23 + mantissa) >> (-e - 1): shift by at least 14 bits.
    if (exponent < -25) return std::uint16_t(sign);  // below a quarter of the smallest step: zero
    mantissa |= 0x800000u;                           // the implicit leading one
    const unsigned shift = unsigned(-exponent - 1);  // 14 .. 24
    const std::uint32_t kept = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((std::uint32_t(1) << shift) - 1);
    return std::uint16_t(sign | round_nearest_even(kept, rest, shift));  // may carry into 2^-14: fine
}

inline float half_bits_to_float(std::uint16_t bits) {
    const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
    if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
    if (exponent != 0) return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
    // zero or subnormal: mantissa * 2^-24, exact in a float
    const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
}

inline std::uint16_t float_to_bfloat16_bits(float f) {
    const std::uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;  // NaN
    // Same exponent as a float: keep the top 16 bits, round on the 16 dropped. A carry into the
    // exponent is right, and past the largest finite value it gives exactly the infinity pattern.
    return std::uint16_t(round_nearest_even(u >> 16, u & 0xffffu, 16));
}

inline float bfloat16_bits_to_float(std::uint16_t b) { return bits_float(std::uint32_t(b) << 16); }

}  // namespace headwise::emulator::machine

inline __half::__half(float f) : bits(headwise::emulator::machine::float_to_half_bits(f)) {}
inline __half::operator float() const { return headwise::emulator::machine::half_bits_to_float(bits); }
inline __nv_bfloat16::__nv_bfloat16(float f) : bits(headwise::emulator::machine::float_to_bfloat16_bits(f)) {}
inline __nv_bfloat16::operator float() const { return headwise::emulator::machine::bfloat16_bits_to_float(bits); }

// CUDA's names for the conversions.
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half x) { return float(x); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return float(b); }
inline unsigned short __half_as_ushort(__half x) { return x.bits; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.bits; }
inline __half __ushort_as_half(unsigned short u) {
    __half x;
    x.bits = u;
    return x;
}
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
    __nv_bfloat16 b;
    b.bits = u;
    return b;
}
