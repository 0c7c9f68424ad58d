// headwise/model/quant.hpp -- GGML's block formats: half floats and 32-element quantized blocks.
//
// A quantized row is a run of blocks of `block` = 32 consecutive elements; each block carries its
// own scale d (and, for Q4_1, its own minimum m) as an IEEE half float, then one small integer q
// per element:
//   Q8_0   x = d * q          q int8 in -127..127        34 bytes per 32 elements (8.5 bits each)
//   Q4_1   x = d * q + m      q in 0..15, 4 bits         20 bytes per 32 elements (5 bits each)
//   Q4_0   x = d * (q - 8)    q in 0..15, 4 bits         18 bytes per 32 elements (4.5 bits each)
// The 4-bit formats pack two elements per byte, and not side by side: byte j holds element j in
// its low nibble and element j + 16 in its high nibble.
//
// Everything here is portable scalar code (no intrinsics): the reference the lesson's faster
// paths are checked against. Multi-byte fields are little-endian, as on every host this builds on.
#pragma once

#include "headwise/model/gguf.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headwise::quant {

inline constexpr std::size_t block = 32;  // elements per quantized block (QK8_0, QK4_1, QK4_0)

// x = d * q
struct BlockQ8_0 {
    std::uint16_t d;  // half float
    std::int8_t qs[block];
};
// x = d * q + m, q in 0..15: element j < 16 is the low nibble of qs[j], element j + 16 the high one.
struct BlockQ4_1 {
    std::uint16_t d;  // half float
    std::uint16_t m;  // half float: the block's minimum
    std::uint8_t qs[block / 2];
};
// x = d * (q - 8), the same nibble order as Q4_1.
struct BlockQ4_0 {
    std::uint16_t d;  // half float
    std::uint8_t qs[block / 2];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 blocks are 34 bytes in the file");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 blocks are 20 bytes in the file");
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 blocks are 18 bytes in the file");

// IEEE binary16 <-> float. fp16_to_float is exact for every half (subnormals, ±inf, NaN with its
// payload); float_to_fp16 rounds to nearest, ties to even, overflows to ±inf and keeps NaN a NaN.
float fp16_to_float(std::uint16_t h);
std::uint16_t float_to_fp16(float f);

// dst[0, n) from one row of `type` starting at src (n a multiple of gguf::block_size(type), else
// std::invalid_argument). src needs no alignment: blocks are copied out byte by byte.
void dequantize_row(gguf::Type type, const std::byte* src, float* dst, std::size_t n);

// A whole tensor into tensor.rows() × tensor.columns() floats, row-major: the shape TensorInfo
// gives (PyTorch's order), in either layout. Values are not checked for NaN or Inf.
std::vector<float> dequantize(const gguf::TensorInfo& tensor);
// Rows [first, last) of a tensor into (last - first) × columns() floats, in either layout.
void dequantize_rows(const gguf::TensorInfo& tensor, std::size_t first, std::size_t last, float* out);

// Panels (gguf::Layout::panels16): a Q4_1 matrix's rows regrouped sixteen side by side, for the
// AVX-512 product (quant_dot.cpp), in the bytes the rows took. Panel p holds rows 16p .. 16p + 15;
// its block b (320 bytes, where the 16 rows' blocks b were) is
//   bytes   0..255  the nibbles: 64-byte run k (k = 0..3) holds bytes qs[4k .. 4k + 3] of row 0,
//                   then of row 1, ... of row 15 -- one 512-bit register, one row per 32-bit lane
//   bytes 256..287  the 16 rows' d (half floats), row 0 first
//   bytes 288..319  the 16 rows' m
inline constexpr std::size_t panel_rows = 16;
inline constexpr std::size_t panel_block_bytes = panel_rows * sizeof(BlockQ4_1);
// Block b of row r of a Q4_1 tensor as the file stores it, in either layout.
BlockQ4_1 block_q4_1(const gguf::TensorInfo& tensor, std::size_t r, std::size_t b);
// Rewrites a Q4_1 tensor's bytes (rows a multiple of 16; std::invalid_argument otherwise) from the
// file's layout into panels. The caller records the new layout (gguf::File::rewrite).
void regroup_in_panels(const gguf::TensorInfo& tensor, std::byte* bytes);

// The reverse, for lessons and tests: a row of n floats (n a multiple of 32) quantized as
// llama.cpp's reference quantizers (quantize_row_*_ref) do it:
//   Q8_0  d = max|x| / 127, q = round(x / d), half away from zero; d is stored as a half.
//   Q4_1  m = min x, d = (max x - m) / 15, q = round((x - m) / d) clamped to 0..15, computed as
//         min(15, trunc((x - m) * (1/d) + 0.5)); d and m are stored as halves.
// Like the reference, q uses the float d (times 1/d), not its half; a block of equal values gets
// d = 0 and every q = 0 (Q4_1 then decodes to m, Q8_0 to 0).
void quantize_row_q8_0(const float* x, BlockQ8_0* out, std::size_t n);
void quantize_row_q4_1(const float* x, BlockQ4_1* out, std::size_t n);

}  // namespace headwise::quant
