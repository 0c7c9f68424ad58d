#include "headwise/model/quant.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace headwise::quant {

static_assert(std::endian::native == std::endian::little, "GGML blocks are little-endian; they are copied as is");

// ---------------------------------------------------------------------------------------------
// Half floats: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits. A float has 8 exponent
// bits (bias 127) and 23 mantissa bits, so a normal half moves over with its exponent rebased by
// 127 - 15 = 112 and its mantissa shifted left by 23 - 10 = 13.

float fp16_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1Fu;
    std::uint32_t mantissa = h & 0x3FFu;
    std::uint32_t bits;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13);  // inf, or NaN with its payload
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;  // ±0
    } else {
        // A subnormal half, mantissa * 2^-24, is a normal float: shift the leading 1 up to bit 10
        // (the implicit bit) and lower the exponent once per shift from 2^-14's (113).
        std::uint32_t e = 113;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
    }
    return std::bit_cast<float>(bits);
}

std::uint16_t float_to_fp16(float f) {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u) {
        // NaN: keep the top of the payload, and set the quiet bit so it cannot turn into inf.
        return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    }
    if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to inf
    if (a >= 0x38800000u) {
        // Normal half (>= 2^-14): rebase the exponent, then round the 13 dropped bits to nearest
        // even: add just under half, plus one more when the kept bit is odd. A carry out of the
        // mantissa bumps the exponent, which is the right answer.
        std::uint32_t r = a - (112u << 23);
        r += 0xFFFu + ((r >> 13) & 1u);
        return static_cast<std::uint16_t>(sign | (r >> 13));
    }
    // Subnormal half: the value in units of 2^-24 is m * 2^(e - 126) with m the 24-bit mantissa
    // (implicit bit included), i.e. m shifted right by s = 126 - e, rounded to nearest even.
    const std::uint32_t e = a >> 23;
    if (e < 102) return sign;  // below 2^-25: rounds to 0 (exactly 2^-25, e = 102, is a tie to 0)
    const std::uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t s = 126 - e;  // 14 .. 24
    std::uint32_t q = m >> s;
    const std::uint32_t rest = m & ((1u << s) - 1u), half = 1u << (s - 1);
    if (rest > half || (rest == half && (q & 1u) != 0)) ++q;  // q = 1024 is 2^-14, the smallest normal
    return static_cast<std::uint16_t>(sign | q);
}

// ---------------------------------------------------------------------------------------------
// Dequantization: one block at a time, copied out of the row first (the row need not be aligned).

namespace {

// x[j] = d * q[j] for q int8
void dequantize_q8_0(const std::byte* src, float* dst, std::size_t blocks) {
    for (std::size_t b = 0; b < blocks; ++b, dst += block) {
        BlockQ8_0 blk;
        std::memcpy(&blk, src + b * sizeof blk, sizeof blk);
        const float d = fp16_to_float(blk.d);
        for (std::size_t j = 0; j < block; ++j) dst[j] = d * static_cast<float>(blk.qs[j]);
    }
}

// x[j] = d * q[j] + m, q[j] = low nibble of qs[j], q[j + 16] = its high nibble
void dequantize_q4_1(const std::byte* src, float* dst, std::size_t blocks) {
    for (std::size_t b = 0; b < blocks; ++b, dst += block) {
        BlockQ4_1 blk;
        std::memcpy(&blk, src + b * sizeof blk, sizeof blk);
        const float d = fp16_to_float(blk.d), m = fp16_to_float(blk.m);
        for (std::size_t j = 0; j < block / 2; ++j) {
            dst[j] = d * static_cast<float>(blk.qs[j] & 0x0F) + m;
            dst[j + block / 2] = d * static_cast<float>(blk.qs[j] >> 4) + m;
        }
    }
}

// x[j] = d * (q[j] - 8), the same nibble order
void dequantize_q4_0(const std::byte* src, float* dst, std::size_t blocks) {
    for (std::size_t b = 0; b < blocks; ++b, dst += block) {
        BlockQ4_0 blk;
        std::memcpy(&blk, src + b * sizeof blk, sizeof blk);
        const float d = fp16_to_float(blk.d);
        for (std::size_t j = 0; j < block / 2; ++j) {
            dst[j] = d * static_cast<float>((blk.qs[j] & 0x0F) - 8);
            dst[j + block / 2] = d * static_cast<float>((blk.qs[j] >> 4) - 8);
        }
    }
}

}  // namespace

void dequantize_row(gguf::Type type, const std::byte* src, float* dst, std::size_t n) {
    const std::size_t per_block = gguf::block_size(type);
    if (n % per_block != 0) {
        throw std::invalid_argument(fmt::format("dequantize_row: {} elements are not a whole number of {} blocks of {}",
                                                n, gguf::to_string(type), per_block));
    }
    switch (type) {
        case gguf::Type::f32:
            if (n != 0) std::memcpy(dst, src, n * sizeof(float));
            return;
        case gguf::Type::f16:
            for (std::size_t i = 0; i < n; ++i) {
                std::uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                dst[i] = fp16_to_float(h);
            }
            return;
        case gguf::Type::q8_0:
            dequantize_q8_0(src, dst, n / block);
            return;
        case gguf::Type::q4_1:
            dequantize_q4_1(src, dst, n / block);
            return;
        case gguf::Type::q4_0:
            dequantize_q4_0(src, dst, n / block);
            return;
    }
}

namespace {

// Where block b of row r lives in panels: its panel's block b, and r's place in the panel.
const std::byte* panel_block(const gguf::TensorInfo& tensor, std::size_t r, std::size_t b) {
    return tensor.data + (r / panel_rows) * panel_rows * tensor.row_bytes() + b * panel_block_bytes;
}

}  // namespace

std::vector<float> dequantize(const gguf::TensorInfo& tensor) {
    std::vector<float> out(tensor.rows() * tensor.columns());  // (rows, columns), row-major
    dequantize_rows(tensor, 0, tensor.rows(), out.data());
    return out;
}

void dequantize_rows(const gguf::TensorInfo& tensor, std::size_t first, std::size_t last, float* out) {
    const std::size_t columns = tensor.columns();
    if (first > last || last > tensor.rows())
        throw std::out_of_range(fmt::format("rows {} .. {} of a tensor of {} rows", first, last, tensor.rows()));
    for (std::size_t r = first; r < last; ++r, out += columns) {
        if (tensor.layout == gguf::Layout::file) {
            dequantize_row(tensor.type, tensor.data + r * tensor.row_bytes(), out, columns);
            continue;
        }
        // straight from the panel (a 512-token prompt dequantizes every matrix once per step)
        const std::size_t lane = r % panel_rows;
        for (std::size_t b = 0; b < columns / block; ++b) {
            const auto* p = reinterpret_cast<const std::uint8_t*>(panel_block(tensor, r, b));
            std::uint16_t dm[2];
            std::memcpy(&dm[0], p + 256 + 2 * lane, 2);
            std::memcpy(&dm[1], p + 288 + 2 * lane, 2);
            const float d = fp16_to_float(dm[0]), m = fp16_to_float(dm[1]);
            float* x = out + b * block;
            for (std::size_t j = 0; j < block / 2; ++j) {
                const std::uint8_t byte = p[64 * (j / 4) + 4 * lane + j % 4];  // qs[j] of row r
                x[j] = d * static_cast<float>(byte & 0x0F) + m;
                x[j + block / 2] = d * static_cast<float>(byte >> 4) + m;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Panels: sixteen Q4_1 rows side by side (see the header for the layout).

BlockQ4_1 block_q4_1(const gguf::TensorInfo& tensor, std::size_t r, std::size_t b) {
    if (tensor.type != gguf::Type::q4_1)
        throw std::invalid_argument(fmt::format("block_q4_1: the tensor is {}", gguf::to_string(tensor.type)));
    if (r >= tensor.rows() || b >= tensor.columns() / block)
        throw std::out_of_range(
            fmt::format("block {} of row {}: the tensor is {} x {}", b, r, tensor.rows(), tensor.columns()));
    BlockQ4_1 q;
    if (tensor.layout == gguf::Layout::file) {
        std::memcpy(&q, tensor.data + r * tensor.row_bytes() + b * sizeof q, sizeof q);
        return q;
    }
    const std::byte* p = panel_block(tensor, r, b);
    const std::size_t lane = r % panel_rows;
    for (std::size_t k = 0; k < 4; ++k) std::memcpy(q.qs + 4 * k, p + 64 * k + 4 * lane, 4);
    std::memcpy(&q.d, p + 256 + 2 * lane, 2);
    std::memcpy(&q.m, p + 288 + 2 * lane, 2);
    return q;
}

void regroup_in_panels(const gguf::TensorInfo& tensor, std::byte* bytes) {
    if (tensor.type != gguf::Type::q4_1 || tensor.rows() % panel_rows != 0 || tensor.layout != gguf::Layout::file)
        throw std::invalid_argument(
            fmt::format("regroup_in_panels: {} is {} with {} rows (Q4_1 in the file's layout, "
                        "a multiple of 16 rows, is regrouped)",
                        tensor.name, gguf::to_string(tensor.type), tensor.rows()));
    const std::size_t row_bytes = tensor.row_bytes(), blocks = tensor.columns() / block;
    std::vector<std::byte> rows(panel_rows * row_bytes);  // one panel as the file had it
    for (std::byte* panel = bytes; panel < bytes + tensor.bytes; panel += rows.size()) {
        std::memcpy(rows.data(), panel, rows.size());
        for (std::size_t lane = 0; lane < panel_rows; ++lane)
            for (std::size_t b = 0; b < blocks; ++b) {
                BlockQ4_1 q;
                std::memcpy(&q, rows.data() + lane * row_bytes + b * sizeof q, sizeof q);
                std::byte* p = panel + b * panel_block_bytes;
                for (std::size_t k = 0; k < 4; ++k) std::memcpy(p + 64 * k + 4 * lane, q.qs + 4 * k, 4);
                std::memcpy(p + 256 + 2 * lane, &q.d, 2);
                std::memcpy(p + 288 + 2 * lane, &q.m, 2);
            }
    }
}

// ---------------------------------------------------------------------------------------------
// Quantization, as llama.cpp's reference quantizers do it (see the header for the formulas).

void quantize_row_q8_0(const float* x, BlockQ8_0* out, std::size_t n) {
    if (n % block != 0) throw std::invalid_argument(fmt::format("quantize_row_q8_0: {} is not a multiple of 32", n));
    for (std::size_t b = 0; b < n / block; ++b, x += block) {
        float amax = 0.0f;  // max |x|
        for (std::size_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = float_to_fp16(d);
        for (std::size_t j = 0; j < block; ++j) out[b].qs[j] = static_cast<std::int8_t>(std::round(x[j] * id));
    }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* out, std::size_t n) {
    if (n % block != 0) throw std::invalid_argument(fmt::format("quantize_row_q4_1: {} is not a multiple of 32", n));
    for (std::size_t b = 0; b < n / block; ++b, x += block) {
        float lo = std::numeric_limits<float>::max(), hi = -std::numeric_limits<float>::max();
        for (std::size_t j = 0; j < block; ++j) {
            lo = std::min(lo, x[j]);
            hi = std::max(hi, x[j]);
        }
        const float d = (hi - lo) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = float_to_fp16(d);
        out[b].m = float_to_fp16(lo);
        auto q = [&](float v) {
            return static_cast<std::uint8_t>(std::min(15, static_cast<int>((v - lo) * id + 0.5f)));
        };
        for (std::size_t j = 0; j < block / 2; ++j)
            out[b].qs[j] = static_cast<std::uint8_t>(q(x[j]) | (q(x[j + block / 2]) << 4));
    }
}

}  // namespace headwise::quant
