// tests for headwise/model/quant.hpp: half floats against values worked out by hand (and every one
// of the 65536 halves), Q8_0 / Q4_1 / Q4_0 blocks decoded against numbers written out here from
// the format's definition, the quantizers' error bounds, and -- through tests/fixtures/smollm2/
// dequant_* (scripts/make_fixtures_dequant.py) -- agreement with llama.cpp's gguf package: its
// quantizers on seeded rows, and its dequantization of rows of the real SmolLM2 tensors (those
// cases exit 77, skipped, when the model is not cached).
#include "headwise/model/quant.hpp"

#include "headwise/io/npy.hpp"

#include "decoder_fixtures.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

namespace fs = std::filesystem;
using namespace headwise;
using quant::float_to_fp16;
using quant::fp16_to_float;

namespace {

const fs::path fixtures = fs::path(HEADWISE_FIXTURES_DIR) / "smollm2";

std::vector<std::byte> as_bytes(const void* p, std::size_t n) {
    std::vector<std::byte> out(n);
    std::memcpy(out.data(), p, n);
    return out;
}

std::vector<float> decode(gguf::Type type, const void* blocks, std::size_t n_bytes, std::size_t n) {
    const auto bytes = as_bytes(blocks, n_bytes);
    std::vector<float> out(n);
    quant::dequantize_row(type, bytes.data(), out.data(), n);
    return out;
}

// Floats a and b at most `ulps` representable floats apart (same sign).
bool within_ulps(float a, float b, int ulps) {
    if (a == b) return true;
    if (std::signbit(a) != std::signbit(b)) return false;
    const auto ia = std::bit_cast<std::int32_t>(a), ib = std::bit_cast<std::int32_t>(b);
    return std::abs(ia - ib) <= ulps;
}

// The lesson 12 model, or the test ends here as skipped (ctest SKIP_RETURN_CODE 77).
const gguf::File& decoder_or_skip() { return testing::decoder_file_or_skip(); }

nlohmann::json manifest() {
    std::ifstream in(fixtures / "dequant_manifest.json");
    return nlohmann::json::parse(in);
}

// A float32 fixture as (rows, columns).
npy::Array fixture(const std::string& file) {
    npy::Array a = npy::read(fixtures / file);
    REQUIRE(a.dtype == npy::DType::float32);
    REQUIRE(a.shape.size() == 2);
    return a;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Half floats

TEST_CASE("fp16_to_float decodes normal, subnormal and special halves exactly", "[quant]") {
    CHECK(fp16_to_float(0x3C00) == 1.0f);
    CHECK(fp16_to_float(0xC000) == -2.0f);
    CHECK(fp16_to_float(0x3800) == 0.5f);
    CHECK(fp16_to_float(0x3555) == 0.333251953125f);  // 1.0101010101b * 2^-2
    CHECK(fp16_to_float(0x7BFF) == 65504.0f);         // the largest half
    CHECK(fp16_to_float(0x0400) == 0x1p-14f);         // the smallest normal
    CHECK(fp16_to_float(0x03FF) == 1023 * 0x1p-24f);  // the largest subnormal
    CHECK(fp16_to_float(0x0200) == 0x1p-15f);
    CHECK(fp16_to_float(0x0001) == 0x1p-24f);  // the smallest subnormal
    CHECK(fp16_to_float(0x8001) == -0x1p-24f);
    CHECK(fp16_to_float(0x0000) == 0.0f);
    CHECK(std::signbit(fp16_to_float(0x8000)));
    CHECK(fp16_to_float(0x7C00) == std::numeric_limits<float>::infinity());
    CHECK(fp16_to_float(0xFC00) == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(fp16_to_float(0x7E00)));
    CHECK(std::isnan(fp16_to_float(0x7C01)));  // a signalling NaN stays a NaN, not inf
}

TEST_CASE("every half survives float and back; value = mantissa * 2^exponent", "[quant]") {
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const auto half = static_cast<std::uint16_t>(h);
        const float f = fp16_to_float(half);
        const std::uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
        if (exponent == 0x1F) {
            CHECK((mantissa == 0 ? std::isinf(f) : std::isnan(f)));
            if (mantissa != 0) CHECK(std::isnan(fp16_to_float(float_to_fp16(f))));
            continue;
        }
        // The definition, in double: subnormals m * 2^-24, normals (1024 + m) * 2^(e - 25).
        const double magnitude =
            exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024.0 + mantissa, static_cast<int>(exponent) - 25);
        const double expected = (h & 0x8000) != 0 ? -magnitude : magnitude;
        if (static_cast<double>(f) != expected || float_to_fp16(f) != half) {
            FAIL_CHECK("half 0x" << std::hex << h << ": " << f << ", expected " << expected << ", back 0x"
                                 << float_to_fp16(f));
        }
    }
}

TEST_CASE("float_to_fp16 rounds to nearest, ties to even, and overflows to inf", "[quant]") {
    // Between each pair of neighbouring positive halves: the midpoint goes to the even one, a
    // float just below it down, just above it up.
    for (std::uint16_t h = 0; h < 0x7BFF; ++h) {
        const float lo = fp16_to_float(h), hi = fp16_to_float(static_cast<std::uint16_t>(h + 1));
        const float mid = (lo + hi) / 2;  // exact: halves have 11 significant bits, floats 24
        const std::uint16_t even = (h % 2 == 0) ? h : static_cast<std::uint16_t>(h + 1);
        if (float_to_fp16(mid) != even || float_to_fp16(std::nextafter(mid, 0.0f)) != h ||
            float_to_fp16(std::nextafter(mid, hi)) != h + 1 || float_to_fp16(-mid) != (even | 0x8000)) {
            FAIL_CHECK("between halves 0x" << std::hex << h << " and 0x" << h + 1);
        }
    }
    CHECK(float_to_fp16(65519.0f) == 0x7BFF);  // below the midpoint to 65536
    CHECK(float_to_fp16(65520.0f) == 0x7C00);  // the midpoint: ties to the even "65536", inf
    CHECK(float_to_fp16(1e10f) == 0x7C00);
    CHECK(float_to_fp16(-1e10f) == 0xFC00);
    CHECK(float_to_fp16(std::numeric_limits<float>::infinity()) == 0x7C00);
    CHECK(float_to_fp16(0x1p-25f) == 0x0000);         // half the smallest subnormal: tie to 0
    CHECK(float_to_fp16(0x1.000002p-25f) == 0x0001);  // just above it
    CHECK(float_to_fp16(3 * 0x1p-25f) == 0x0002);     // 1.5 units: tie to 2
    CHECK(float_to_fp16(1e-10f) == 0x0000);
    CHECK(float_to_fp16(std::numeric_limits<float>::denorm_min()) == 0x0000);
    CHECK(float_to_fp16(-0.0f) == 0x8000);
    CHECK(float_to_fp16(0.1f) == 0x2E66);  // 0.0999755859375
    CHECK(float_to_fp16(1.0f / 3) == 0x3555);
    const std::uint16_t nan = float_to_fp16(std::numeric_limits<float>::quiet_NaN());
    CHECK((nan & 0x7C00) == 0x7C00);
    CHECK((nan & 0x03FF) != 0);
}

// ---------------------------------------------------------------------------------------------
// Blocks, decoded against numbers written out from the format's definition

TEST_CASE("a Q8_0 block decodes to d * q", "[quant]") {
    quant::BlockQ8_0 b{};
    b.d = 0x3800;  // d = 0.5
    const std::int8_t q[32] = {-127, -100, -3, -2, -1, 0,  1,  2,  3,  4,  5,  6,  7,  8,   9,   10,
                               11,   12,   13, 14, 15, 16, 17, 18, 19, 20, 50, 64, 99, 100, 126, 127};
    std::memcpy(b.qs, q, 32);
    const std::vector<float> expected = {-63.5f, -50.0f, -1.5f, -1.0f, -0.5f, 0.0f,  0.5f,  1.0f,  1.5f,  2.0f, 2.5f,
                                         3.0f,   3.5f,   4.0f,  4.5f,  5.0f,  5.5f,  6.0f,  6.5f,  7.0f,  7.5f, 8.0f,
                                         8.5f,   9.0f,   9.5f,  10.0f, 25.0f, 32.0f, 49.5f, 50.0f, 63.0f, 63.5f};
    CHECK(decode(gguf::Type::q8_0, &b, sizeof b, 32) == expected);
}

TEST_CASE("a Q4_1 block decodes to d * q + m, low nibbles first, then high nibbles", "[quant]") {
    quant::BlockQ4_1 b{};
    b.d = 0x3400;  // d = 0.25
    b.m = 0xBC00;  // m = -1
    // qs[j] = j in the low nibble (element j), 15 - j in the high nibble (element j + 16)
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
    const std::vector<float> expected = {-1.0f, -0.75f, -0.5f, -0.25f, 0.0f,  0.25f, 0.5f,   0.75f, 1.0f,   1.25f, 1.5f,
                                         1.75f, 2.0f,   2.25f, 2.5f,   2.75f, 2.75f, 2.5f,   2.25f, 2.0f,   1.75f, 1.5f,
                                         1.25f, 1.0f,   0.75f, 0.5f,   0.25f, 0.0f,  -0.25f, -0.5f, -0.75f, -1.0f};
    CHECK(decode(gguf::Type::q4_1, &b, sizeof b, 32) == expected);
}

TEST_CASE("a Q4_0 block decodes to d * (q - 8)", "[quant]") {
    quant::BlockQ4_0 b{};
    b.d = 0xC000;                                                                    // d = -2
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>(j | (8 << 4));  // high nibbles: q = 8
    const std::vector<float> expected = {16, 14, 12, 10, 8, 6, 4, 2, 0, -2, -4, -6, -8, -10, -12, -14,
                                         0,  0,  0,  0,  0, 0, 0, 0, 0, 0,  0,  0,  0,  0,   0,   0};
    CHECK(decode(gguf::Type::q4_0, &b, sizeof b, 32) == expected);
}

TEST_CASE("dequantize_row reads F32 and F16 rows, several blocks, from unaligned bytes", "[quant]") {
    std::vector<std::byte> buffer(1 + 2 * 20);
    quant::BlockQ4_1 b[2]{};
    b[0].d = 0x3C00;  // 1
    b[0].m = 0x0000;
    b[1].d = 0x4000;     // 2
    b[1].m = 0x3C00;     // 1
    b[0].qs[0] = 0x21;   // elements 0 = 1, 16 = 2
    b[1].qs[15] = 0xF3;  // elements 32 + 15 = 2*3 + 1 = 7, 32 + 31 = 2*15 + 1 = 31
    std::memcpy(buffer.data() + 1, b, sizeof b);
    std::vector<float> out(64);
    quant::dequantize_row(gguf::Type::q4_1, buffer.data() + 1, out.data(), 64);
    CHECK(out[0] == 1.0f);
    CHECK(out[1] == 0.0f);
    CHECK(out[16] == 2.0f);
    CHECK(out[32] == 1.0f);
    CHECK(out[47] == 7.0f);
    CHECK(out[63] == 31.0f);

    const std::uint16_t halves[3] = {0x3C00, 0xB800, 0x0001};
    CHECK(decode(gguf::Type::f16, halves, sizeof halves, 3) == std::vector<float>{1.0f, -0.5f, 0x1p-24f});
    const float f32[2] = {3.5f, -0.0f};
    CHECK(decode(gguf::Type::f32, f32, sizeof f32, 2) == std::vector<float>{3.5f, -0.0f});
    CHECK_THROWS_AS(quant::dequantize_row(gguf::Type::q8_0, buffer.data(), out.data(), 48), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Quantizers

TEST_CASE("quantize_row_q8_0 and q4_1 produce the reference blocks for a ramp", "[quant]") {
    float x[32];
    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);  // -16 .. 15
    quant::BlockQ8_0 q8;
    quant::quantize_row_q8_0(x, &q8, 32);
    CHECK(q8.d == float_to_fp16(16.0f / 127));  // max |x| / 127
    CHECK(q8.qs[0] == -127);
    CHECK(q8.qs[8] == -64);  // -8 * 127/16 = -63.5: half away from zero
    CHECK(q8.qs[16] == 0);
    CHECK(q8.qs[17] == 8);    // 127/16 = 7.9375
    CHECK(q8.qs[31] == 119);  // 15 * 127/16 = 119.06

    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j);  // 0 .. 31
    quant::BlockQ4_1 q4;
    quant::quantize_row_q4_1(x, &q4, 32);
    CHECK(q4.m == 0x0000);                     // min = 0
    CHECK(q4.d == float_to_fp16(31.0f / 15));  // (max - min) / 15
    // q = trunc(x * 15/31 + 0.5): x = 1 -> 0 (0.98), 2 -> 1 (1.47), 16 -> 8 (8.24), 31 -> 15
    CHECK((q4.qs[1] & 0x0F) == 0);
    CHECK((q4.qs[2] & 0x0F) == 1);
    CHECK((q4.qs[0] >> 4) == 8);
    CHECK((q4.qs[15] >> 4) == 15);

    for (float& v : x) v = 0.25f;  // all equal: d = 0, every q = 0, decodes to m
    quant::quantize_row_q4_1(x, &q4, 32);
    CHECK(q4.d == 0);
    CHECK(decode(gguf::Type::q4_1, &q4, sizeof q4, 32) == std::vector<float>(32, 0.25f));
    for (float& v : x) v = 0.0f;
    quant::quantize_row_q8_0(x, &q8, 32);
    CHECK(decode(gguf::Type::q8_0, &q8, sizeof q8, 32) == std::vector<float>(32, 0.0f));
    CHECK_THROWS_AS(quant::quantize_row_q8_0(x, &q8, 31), std::invalid_argument);
}

TEST_CASE("quantize then dequantize stays within half a step plus the halves' rounding", "[quant]") {
    std::mt19937 rng(12);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::size_t n = 32 * 64;
    for (const float scale : {1e-3f, 0.05f, 1.0f, 300.0f}) {
        std::vector<float> x(n);
        for (float& v : x) v = scale * normal(rng);
        std::vector<quant::BlockQ8_0> q8(n / 32);
        std::vector<quant::BlockQ4_1> q4(n / 32);
        quant::quantize_row_q8_0(x.data(), q8.data(), n);
        quant::quantize_row_q4_1(x.data(), q4.data(), n);
        const auto y8 = decode(gguf::Type::q8_0, q8.data(), q8.size() * sizeof q8[0], n);
        const auto y4 = decode(gguf::Type::q4_1, q4.data(), q4.size() * sizeof q4[0], n);
        for (std::size_t b = 0; b < n / 32; ++b) {
            float amax = 0, lo = x[b * 32], hi = x[b * 32];
            for (std::size_t j = b * 32; j < b * 32 + 32; ++j) {
                amax = std::max(amax, std::fabs(x[j]));
                lo = std::min(lo, x[j]);
                hi = std::max(hi, x[j]);
            }
            // |x - d q| <= d/2; a half is off by at most 2^-11 relative (2^-25 absolute below
            // 2^-14, where halves are subnormal), and d's error counts |q| <= 127 (15) times.
            auto half_error = [](float v) { return std::max(std::fabs(v) / 2048, 0x1p-25f); };
            const float d8 = amax / 127, d4 = (hi - lo) / 15;
            const float bound8 = (d8 / 2 + 127 * half_error(d8)) * 1.001f;
            const float bound4 = (d4 / 2 + 15 * half_error(d4) + half_error(lo)) * 1.001f;
            for (std::size_t j = b * 32; j < b * 32 + 32; ++j) {
                if (std::fabs(y8[j] - x[j]) > bound8 || std::fabs(y4[j] - x[j]) > bound4) {
                    FAIL_CHECK("scale " << scale << " element " << j << ": x " << x[j] << ", Q8_0 " << y8[j]
                                        << " (bound " << bound8 << "), Q4_1 " << y4[j] << " (bound " << bound4 << ")");
                }
            }
        }
    }
}

TEST_CASE("the quantizers agree with llama.cpp's gguf package on seeded rows", "[quant]") {
    const auto m = manifest();
    const npy::Array input = fixture(m["quantize"]["input"]);
    const std::size_t rows = input.shape[0], n = input.shape[1];
    for (const char* kind : {"q8_0", "q4_1"}) {
        const npy::Array expected = fixture(m["quantize"][kind]);
        REQUIRE(expected.shape == input.shape);
        for (std::size_t r = 0; r < rows; ++r) {
            std::vector<float> x(input.values.begin() + r * n, input.values.begin() + (r + 1) * n);
            std::vector<float> y(n);
            if (std::string(kind) == "q8_0") {
                std::vector<quant::BlockQ8_0> q(n / 32);
                quant::quantize_row_q8_0(x.data(), q.data(), n);
                y = decode(gguf::Type::q8_0, q.data(), q.size() * sizeof q[0], n);
            } else {
                std::vector<quant::BlockQ4_1> q(n / 32);
                quant::quantize_row_q4_1(x.data(), q.data(), n);
                y = decode(gguf::Type::q4_1, q.data(), q.size() * sizeof q[0], n);
            }
            for (std::size_t j = 0; j < n; ++j) {
                const auto want = static_cast<float>(expected.values[r * n + j]);
                if (!within_ulps(y[j], want, 1))
                    FAIL_CHECK(kind << " row " << r << " [" << j << "]: " << y[j] << " vs " << want);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The real model's tensors (skipped without it)

TEST_CASE("dequantize_row of SmolLM2's Q4_1, Q8_0 and F32 rows equals the gguf package's", "[quant][model]") {
    const gguf::File& file = decoder_or_skip();
    const auto m = manifest();
    REQUIRE(file.file_bytes() == m["model"]["bytes"].get<std::size_t>());
    std::size_t checked = 0;
    for (const auto& entry : m["tensors"]) {
        const auto name = entry["name"].get<std::string>();
        INFO(name);
        const gguf::TensorInfo& t = file.tensor(name);
        CHECK(gguf::to_string(t.type) == entry["type"].get<std::string>());
        CHECK(t.shape == entry["shape"].get<std::vector<std::size_t>>());
        const npy::Array expected = fixture(entry["file"]);
        const auto rows = entry["rows"].get<std::vector<std::size_t>>();
        REQUIRE(expected.shape == std::vector<std::size_t>{rows.size(), t.columns()});
        std::vector<float> out(t.columns());
        for (std::size_t k = 0; k < rows.size(); ++k) {
            quant::dequantize_row(t.type, t.row(rows[k]), out.data(), out.size());
            std::size_t bad = 0;
            for (std::size_t j = 0; j < out.size(); ++j) {
                // Exact but for Q4_1's d * q + m, which a compiler may fuse into one rounding.
                const int ulps = t.type == gguf::Type::q4_1 ? 1 : 0;
                bad += !within_ulps(out[j], static_cast<float>(expected.values[k * out.size() + j]), ulps);
            }
            CHECK(bad == 0);
            checked += out.size();
        }
    }
    CHECK(checked == 13 * 576 + 2 * 1536);
}

TEST_CASE("dequantize gives a whole SmolLM2 tensor row by row, (rows, columns) row-major", "[quant][model]") {
    const gguf::File& file = decoder_or_skip();
    const gguf::TensorInfo& k = file.tensor("blk.0.attn_k.weight");  // Q4_1 (192, 576)
    const std::vector<float> all = quant::dequantize(k);
    REQUIRE(all.size() == 192 * 576);
    std::vector<float> row(576);
    for (std::size_t r : {std::size_t{0}, std::size_t{77}, std::size_t{191}}) {
        quant::dequantize_row(k.type, k.row(r), row.data(), row.size());
        CHECK(std::equal(row.begin(), row.end(), all.begin() + static_cast<std::ptrdiff_t>(r * 576)));
    }
    const std::vector<float> norm = quant::dequantize(file.tensor("output_norm.weight"));  // F32 (576)
    REQUIRE(norm.size() == 576);
    CHECK(std::all_of(norm.begin(), norm.end(), [](float v) { return std::isfinite(v) && v != 0.0f; }));
    CHECK_THROWS_AS(k.row(192), std::out_of_range);
}

TEST_CASE("regrouped in panels, a Q4_1 matrix keeps every block and dequantizes to the same values", "[quant]") {
    const std::size_t rows = 32, n = 96;  // two panels of three blocks
    std::mt19937 gen(11);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    std::vector<float> w(rows * n);
    for (float& x : w) x = normal(gen);
    std::vector<quant::BlockQ4_1> blocks(rows * n / quant::block);
    quant::quantize_row_q4_1(w.data(), blocks.data(), w.size());
    const std::vector<quant::BlockQ4_1> file_blocks = blocks;
    gguf::TensorInfo t;
    t.name = "w";
    t.shape = {rows, n};
    t.type = gguf::Type::q4_1;
    t.bytes = blocks.size() * sizeof(quant::BlockQ4_1);
    t.data = reinterpret_cast<const std::byte*>(blocks.data());
    const std::vector<float> before = quant::dequantize(t);

    quant::regroup_in_panels(t, reinterpret_cast<std::byte*>(blocks.data()));
    t.layout = gguf::Layout::panels16;
    // row 17's first block now sits in panel 1: its nibbles at byte 4 (lane 1) of each 64-byte run
    const auto* panel1 = reinterpret_cast<const std::byte*>(blocks.data()) + 16 * (n / 32) * 20;
    CHECK(std::memcmp(panel1 + 4, file_blocks[17 * 3].qs, 4) == 0);
    CHECK(std::memcmp(panel1 + 64 + 4, file_blocks[17 * 3].qs + 4, 4) == 0);
    CHECK(std::memcmp(panel1 + 256 + 2, &file_blocks[17 * 3].d, 2) == 0);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t b = 0; b < n / quant::block; ++b) {
            const quant::BlockQ4_1 q = quant::block_q4_1(t, r, b), want = file_blocks[r * 3 + b];
            CHECK(std::memcmp(&q, &want, sizeof q) == 0);
        }
    CHECK(quant::dequantize(t) == before);
    std::vector<float> two(2 * n);
    quant::dequantize_rows(t, 20, 22, two.data());
    CHECK(std::equal(two.begin(), two.end(), before.begin() + 20 * n));
    CHECK_THROWS_AS(t.row(0), std::logic_error);                                   // rows are no longer contiguous
    CHECK_THROWS_AS(quant::regroup_in_panels(t, nullptr), std::invalid_argument);  // already regrouped

    gguf::TensorInfo odd = t;  // 24 rows: not whole panels
    odd.layout = gguf::Layout::file;
    odd.shape = {24, n};
    CHECK_THROWS_WITH(quant::regroup_in_panels(odd, nullptr), Catch::Contains("a multiple of 16 rows"));
}
