#include "headwise/model/quant_dot.hpp"

#include "headwise/base/tensor.hpp"
#include "headwise/model/quant.hpp"

#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace headwise::quant {

namespace {

#define HEADWISE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

// One block of 32: d = max |x| / 127, q = round(x / d) (to even, as nearbyint in the default
// rounding mode: the vector conversion rounds the same way), s = d * sum q.
void quantize_block(const float* x, std::int8_t* q, float* ds) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float inv = d > 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (std::size_t j = 0; j < block; ++j) {
        const int code = static_cast<int>(std::nearbyint(x[j] * inv));
        q[j] = static_cast<std::int8_t>(code);
        sum += code;
    }
    ds[0] = d;
    ds[1] = d * static_cast<float>(sum);
}

HEADWISE_AVX512 void quantize_block_avx512(const float* x, std::int8_t* q, float* ds) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = amax / 127.0f;
    const __m512 inv = _mm512_set1_ps(d > 0.0f ? 1.0f / d : 0.0f);
    const __m512i c0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, inv)), c1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, inv));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtsepi32_epi8(c0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtsepi32_epi8(c1));
    ds[0] = d;
    ds[1] = d * static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(c0, c1)));
}

}  // namespace

void QuantizedRow::quantize(const float* x, std::size_t n) {
    if (n % block != 0)
        throw std::invalid_argument(fmt::format("QuantizedRow: {} values are not whole blocks of 32", n));
    if (n > capacity_) {
        q_.reset(static_cast<std::int8_t*>(::operator new[](n, std::align_val_t{64})));
        groups_.reset(
            static_cast<std::byte*>(::operator new[]((n / block + 3) / 4 * group_bytes, std::align_val_t{64})));
        capacity_ = n;
    }
    n_ = n;
    ds_.resize(2 * (n / block));
    static const bool avx512 = cpu_has(Isa::avx512);
    for (std::size_t b = 0; b < n / block; ++b) {
        if (avx512)
            quantize_block_avx512(x + b * block, q_.get() + b * block, ds_.data() + 2 * b);
        else
            quantize_block(x + b * block, q_.get() + b * block, ds_.data() + 2 * b);
        place_in_group(b);
    }
    if (blocks() % 4 != 0) {  // the last group's missing blocks: zeros
        std::byte* last = groups_.get() + (groups() - 1) * group_bytes;
        const std::size_t k = blocks() % 4;
        std::memset(last + 16 * k, 0, 16 * (4 - k));
        std::memset(last + 64 + 16 * k, 0, 16 * (4 - k));
        std::memset(last + 128 + 16 * k, 0, 16 * (4 - k));
        std::memset(last + 192 + 4 * k, 0, 4 * (4 - k));
    }
}

void QuantizedRow::place_in_group(std::size_t b) {
    std::byte* g = groups_.get() + b / 4 * group_bytes;
    const std::size_t k = b % 4;
    std::memcpy(g + 16 * k, q_.get() + b * block, 16);
    std::memcpy(g + 64 + 16 * k, q_.get() + b * block + 16, 16);
    float* scales = reinterpret_cast<float*>(g + 128);
    for (std::size_t lane = 0; lane < 4; ++lane) scales[4 * k + lane] = d(b);
    scales[16 + k] = s(b);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Plain C++: the definition, and what the other two are tested against.

float dot_q4_1_scalar(const BlockQ4_1* w, const QuantizedRow& x) {
    float sum = 0.0f;
    for (std::size_t b = 0; b < x.blocks(); ++b) {
        const std::int8_t* q = x.q() + b * block;
        int isum = 0;
        for (std::size_t j = 0; j < block / 2; ++j) {
            isum += (w[b].qs[j] & 0x0F) * q[j];
            isum += (w[b].qs[j] >> 4) * q[j + block / 2];
        }
        sum += fp16_to_float(w[b].d) * x.d(b) * static_cast<float>(isum) + fp16_to_float(w[b].m) * x.s(b);
    }
    return sum;
}

float dot_q8_0_scalar(const BlockQ8_0* w, const QuantizedRow& x) {
    float sum = 0.0f;
    for (std::size_t b = 0; b < x.blocks(); ++b) {
        const std::int8_t* q = x.q() + b * block;
        int isum = 0;
        for (std::size_t j = 0; j < block; ++j) isum += w[b].qs[j] * q[j];
        sum += fp16_to_float(w[b].d) * x.d(b) * static_cast<float>(isum);
    }
    return sum;
}

// ---------------------------------------------------------------------------------------------
// AVX2: a block's 32 products in one 256-bit register. maddubs multiplies unsigned bytes by signed
// ones and adds neighbours into 16 bits (15 * 127 * 2 fits; for Q8_0 the weight's sign moves onto
// the activation so that |w| is the unsigned side: 128 * 127 * 2 fits), madd against ones widens
// to eight 32-bit sums.

#define HEADWISE_AVX2 __attribute__((target("avx2,fma,f16c")))

HEADWISE_AVX2 inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// The 32 nibbles of a Q4_1 block as bytes 0..15, in element order (low nibbles first).
HEADWISE_AVX2 inline __m256i nibbles(const std::uint8_t* qs) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

HEADWISE_AVX2 inline __m256i load32(const std::int8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

HEADWISE_AVX2 float dot_q4_1_avx2(const BlockQ4_1* w, const QuantizedRow& x, std::size_t first_block = 0) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    float mins0 = 0.0f, mins1 = 0.0f;
    auto one = [&](std::size_t b, __m256& acc, float& mins) HEADWISE_AVX2 {
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(nibbles(w[b].qs), load32(x.q() + b * block)), ones);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(w[b].d) * x.d(b)), _mm256_cvtepi32_ps(p), acc);
        mins += _cvtsh_ss(w[b].m) * x.s(b);
    };
    std::size_t b = first_block;
    for (; b + 2 <= x.blocks(); b += 2) {
        one(b, acc0, mins0);
        one(b + 1, acc1, mins1);
    }
    if (b < x.blocks()) one(b, acc0, mins0);
    return hsum(_mm256_add_ps(acc0, acc1)) + mins0 + mins1;
}

HEADWISE_AVX2 float dot_q8_0_avx2(const BlockQ8_0* w, const QuantizedRow& x, std::size_t first_block = 0) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    auto one = [&](std::size_t b, __m256& acc) HEADWISE_AVX2 {
        const __m256i qw = load32(w[b].qs);
        const __m256i magnitude = _mm256_sign_epi8(qw, qw);
        const __m256i signed_x = _mm256_sign_epi8(load32(x.q() + b * block), qw);
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, signed_x), ones);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(w[b].d) * x.d(b)), _mm256_cvtepi32_ps(p), acc);
    };
    std::size_t b = first_block;
    for (; b + 2 <= x.blocks(); b += 2) {
        one(b, acc0);
        one(b + 1, acc1);
    }
    if (b < x.blocks()) one(b, acc0);
    return hsum(_mm256_add_ps(acc0, acc1));
}

// ---------------------------------------------------------------------------------------------
// AVX-512 with VNNI: two blocks a step, as quant_dot.hpp draws it.

// The 32-bit word at p (a block's fp16 d and m, or d and the next field), unaligned.
inline std::int32_t word(const void* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// y[r] = the sum of acc[r]'s 16 lanes and extra[r]'s 4, r < R; four rows' sums fold together.
template <std::size_t R>
HEADWISE_AVX512 inline void store_sums(const __m512* acc, const __m128* extra, float* y) {
    if constexpr (R == 4) {
        __m256 half[4];
        for (std::size_t r = 0; r < 4; ++r)
            half[r] = _mm256_add_ps(_mm512_castps512_ps256(acc[r]),
                                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r]), 1)));
        const __m256 all = _mm256_hadd_ps(_mm256_hadd_ps(half[0], half[1]), _mm256_hadd_ps(half[2], half[3]));
        const __m128 sums = _mm_add_ps(_mm256_castps256_ps128(all), _mm256_extractf128_ps(all, 1));
        const __m128 more = _mm_hadd_ps(_mm_hadd_ps(extra[0], extra[1]), _mm_hadd_ps(extra[2], extra[3]));
        _mm_storeu_ps(y, _mm_add_ps(sums, more));
    } else {
        for (std::size_t r = 0; r < R; ++r) {
            const __m128 e = _mm_hadd_ps(extra[r], extra[r]);
            y[r] = _mm512_reduce_add_ps(acc[r]) + _mm_cvtss_f32(_mm_hadd_ps(e, e));
        }
    }
}

// Rows r = 0 .. R-1 of a matrix (row r at w + r * stride) against x, R sums into y. The rows are
// read one after the other (interleaving them, to share x's loads, ran 2-3x slower from memory:
// the prefetcher follows one ascending stream best), and their horizontal sums are folded together.
// A group of four blocks (80 bytes: d m qs[16], four times) is two loads; a last group of fewer
// blocks loads only its own bytes (the rest zeros, which x's zeros there meet).
template <std::size_t R>
HEADWISE_AVX512 void rows_q4_1_avx512(const std::byte* w, std::size_t stride, const QuantizedRow& x, float* y) {
    // the four runs of nibbles, dwords 1-4, 6-9, 11-14 of the first 64 bytes and 0-3 of the next 16
    const __m512i nibble_dwords = _mm512_setr_epi32(1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 14, 16, 17, 18, 19);
    // halves 0, 10, 20, 30 are the blocks' d (each four times: the lanes of their sums), 1, 11, 21, 31 their m
    const __m512i scale_halves = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 31, 21, 11, 1, 30, 30, 30, 30, 20,
                                                  20, 20, 20, 10, 10, 10, 10, 0, 0, 0, 0);
    const __m512i low = _mm512_set1_epi8(0x0F);
    const std::size_t full = x.blocks() / 4, groups = x.groups();
    const __mmask64 tail_bytes = (x.blocks() % 4) == 0 ? 0 : ~__mmask64{0} >> (64 - 20 * (x.blocks() % 4));
    __m512 acc[R];
    __m128 mins[R];
    for (std::size_t r = 0; r < R; ++r) {
        __m512 row_acc = _mm512_setzero_ps();
        __m128 row_mins = _mm_setzero_ps();
        const std::byte* row = w + r * stride;
        for (std::size_t g = 0; g < groups; ++g) {
            const std::byte* p = row + g * 4 * sizeof(BlockQ4_1);
            const bool whole = g < full;
            const __m512i head = whole ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(tail_bytes, p);
            const __m512i next = whole
                                     ? _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 64)))
                                     : _mm512_setzero_si512();  // only its dwords 0-3 are read
            const __m512i qs = _mm512_permutex2var_epi32(head, nibble_dwords, next);
            const std::byte* xg = x.group(g);
            __m512i sums =
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(qs, low), _mm512_load_si512(xg));
            sums =
                _mm512_dpbusd_epi32(sums, _mm512_and_si512(_mm512_srli_epi16(qs, 4), low), _mm512_load_si512(xg + 64));
            const __m512i halves = _mm512_permutexvar_epi16(scale_halves, head);
            const auto* xs = reinterpret_cast<const float*>(xg + 128);
            const __m512 scales = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(halves)), _mm512_load_ps(xs));
            row_acc = _mm512_fmadd_ps(scales, _mm512_cvtepi32_ps(sums), row_acc);
            row_mins = _mm_fmadd_ps(_mm_cvtph_ps(_mm512_extracti32x4_epi32(halves, 2)), _mm_load_ps(xs + 16), row_mins);
        }
        acc[r] = row_acc, mins[r] = row_mins;
    }
    store_sums<R>(acc, mins, y);
}

template <std::size_t R>
HEADWISE_AVX512 void rows_q8_0_avx512(const std::byte* w, std::size_t stride, const QuantizedRow& x, float* y) {
    const __m512i spread = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512 acc[R];
    for (std::size_t r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    const std::size_t pairs = x.blocks() / 2;
    for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t b = 0; b < 2 * pairs; b += 2) {
            const __m512i qx = _mm512_load_si512(x.q() + b * block);
            const __m128 xds = _mm_loadu_ps(x.ds() + 2 * b);
            const auto* q = reinterpret_cast<const BlockQ8_0*>(w + r * stride) + b;
            const __m512i qw = _mm512_inserti64x4(_mm512_zextsi256_si512(load32(q[0].qs)), load32(q[1].qs), 1);
            // |w| . (x with w's sign): dpbusd wants its first operand unsigned
            const __mmask64 negative = _mm512_movepi8_mask(qw);
            const __m512i signed_x = _mm512_mask_sub_epi8(qx, negative, _mm512_setzero_si512(), qx);
            const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(qw), signed_x);
            // (d_w, -, d_w', -) * (d_x, s_x, d_x', s_x'): lanes 1 and 3 unused
            const __m128 products = _mm_mul_ps(_mm_cvtph_ps(_mm_set_epi32(0, 0, word(&q[1]), word(&q[0]))), xds);
            acc[r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread, _mm512_zextps128_ps512(products)),
                                     _mm512_cvtepi32_ps(sums), acc[r]);
        }
    }
    __m128 none[R];
    for (std::size_t r = 0; r < R; ++r) none[r] = _mm_setzero_ps();
    store_sums<R>(acc, none, y);
    if (2 * pairs < x.blocks())
        for (std::size_t r = 0; r < R; ++r)
            y[r] += dot_q8_0_avx2(reinterpret_cast<const BlockQ8_0*>(w + r * stride), x, 2 * pairs);
}

// The 16 rows of a panel (quant.hpp) against x, 16 sums into y. A 64-byte run of nibbles holds 4
// bytes of each row, one row per 32-bit lane, so dpbusd against x's matching 4 codes (the same for
// every lane: a broadcast) adds each row's products in its own lane -- no horizontal sums -- and a
// block's scales are applied once for the 16 rows. The high nibbles are taken as 16 x q (masked,
// not shifted) and their sums divided by 16 once per block, exactly.
HEADWISE_AVX512 void panel_q4_1_avx512(const std::byte* panel, const QuantizedRow& x, float* y) {
    const __m512i low = _mm512_set1_epi8(0x0F), high = _mm512_set1_epi8(static_cast<char>(0xF0));
    __m512 acc = _mm512_setzero_ps(), mins = _mm512_setzero_ps();
    for (std::size_t b = 0; b < x.blocks(); ++b, panel += panel_block_bytes) {
        const std::int8_t* q = x.q() + b * block;
        __m512i sum_low = _mm512_setzero_si512(), sum_high = _mm512_setzero_si512();
        for (std::size_t k = 0; k < 4; ++k) {
            const __m512i nibbles = _mm512_loadu_si512(panel + 64 * k);
            sum_low = _mm512_dpbusd_epi32(sum_low, _mm512_and_si512(nibbles, low), _mm512_set1_epi32(word(q + 4 * k)));
            sum_high =
                _mm512_dpbusd_epi32(sum_high, _mm512_and_si512(nibbles, high), _mm512_set1_epi32(word(q + 16 + 4 * k)));
        }
        const __m512i sums = _mm512_add_epi32(sum_low, _mm512_srai_epi32(sum_high, 4));
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 256)));
        const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 288)));
        acc = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x.d(b))), _mm512_cvtepi32_ps(sums), acc);
        mins = _mm512_fmadd_ps(m, _mm512_set1_ps(x.s(b)), mins);
    }
    _mm512_storeu_ps(y, _mm512_add_ps(acc, mins));
}

// The 16 rows of a panel against x with AVX2: a 64-byte run of nibbles is two registers of 8 rows;
// maddubs (nibble x code, pairs added in 16 bits: 15 * 127 * 2 fits) then madd against ones leaves
// each row's 4 products summed in its own 32-bit lane. The high nibbles are shifted down here
// (16 x q would overflow maddubs's 16 bits).
HEADWISE_AVX2 void panel_q4_1_avx2(const std::byte* panel, const QuantizedRow& x, float* y) {
    const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};  // rows 0-7, rows 8-15
    for (std::size_t b = 0; b < x.blocks(); ++b, panel += panel_block_bytes) {
        const std::int8_t* q = x.q() + b * block;
        __m256i sums[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
        for (std::size_t k = 0; k < 4; ++k) {
            const __m256i x_low = _mm256_set1_epi32(word(q + 4 * k)), x_high = _mm256_set1_epi32(word(q + 16 + 4 * k));
            for (std::size_t half = 0; half < 2; ++half) {
                const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 64 * k + 32 * half));
                const __m256i products = _mm256_add_epi32(
                    _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(v, low), x_low), ones),
                    _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), low), x_high),
                                      ones));
                sums[half] = _mm256_add_epi32(sums[half], products);
            }
        }
        for (std::size_t half = 0; half < 2; ++half) {
            const __m256 d =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + 256 + 16 * half)));
            const __m256 m =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + 288 + 16 * half)));
            acc[half] =
                _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x.d(b))), _mm256_cvtepi32_ps(sums[half]), acc[half]);
            acc[half] = _mm256_fmadd_ps(m, _mm256_set1_ps(x.s(b)), acc[half]);
        }
    }
    _mm256_storeu_ps(y, acc[0]);
    _mm256_storeu_ps(y + 8, acc[1]);
}

// The same in plain C++, block by block as dot_q4_1_scalar sums a row (the same roundings).
void panel_q4_1_scalar(const std::byte* panel, const QuantizedRow& x, float* y) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(panel);
    std::fill(y, y + panel_rows, 0.0f);
    for (std::size_t b = 0; b < x.blocks(); ++b, p += panel_block_bytes) {
        const std::int8_t* q = x.q() + b * block;
        for (std::size_t lane = 0; lane < panel_rows; ++lane) {
            int isum = 0;
            for (std::size_t j = 0; j < block / 2; ++j) {
                const std::uint8_t byte = p[64 * (j / 4) + 4 * lane + j % 4];  // qs[j] of this row
                isum += (byte & 0x0F) * q[j] + (byte >> 4) * q[j + block / 2];
            }
            std::uint16_t dm[2];
            std::memcpy(&dm[0], p + 256 + 2 * lane, 2);
            std::memcpy(&dm[1], p + 288 + 2 * lane, 2);
            y[lane] += fp16_to_float(dm[0]) * x.d(b) * static_cast<float>(isum) + fp16_to_float(dm[1]) * x.s(b);
        }
    }
}

// The 16 rows of a panel (quant.hpp) dequantized into out (16 rows, `columns` apart): per 64-byte run
// of nibbles, each quarter of the register (4 bytes of 4 rows) widened to 16 floats, then d * q + m
// (multiply, then add: the same roundings as quant::dequantize_row) and 4 floats stored per row.
HEADWISE_AVX512 void dequantize_panel_avx512(const std::byte* panel, std::size_t columns, float* out) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    for (std::size_t b = 0; b < columns / block; ++b, panel += panel_block_bytes) {
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 256)));
        const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 288)));
        __m512 dq[4], mq[4];  // rows 4k .. 4k + 3's d and m, each four times
        for (int k = 0; k < 4; ++k) {
            const __m512i rows =
                _mm512_setr_epi32(4 * k, 4 * k, 4 * k, 4 * k, 4 * k + 1, 4 * k + 1, 4 * k + 1, 4 * k + 1, 4 * k + 2,
                                  4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 3, 4 * k + 3, 4 * k + 3, 4 * k + 3);
            dq[k] = _mm512_permutexvar_ps(rows, d);
            mq[k] = _mm512_permutexvar_ps(rows, m);
        }
        for (std::size_t run = 0; run < 4; ++run) {  // bytes qs[4 run .. 4 run + 3] of every row
            const __m512i nibbles = _mm512_loadu_si512(panel + 64 * run);
            const __m512i halves[2] = {_mm512_and_si512(nibbles, low),
                                       _mm512_and_si512(_mm512_srli_epi16(nibbles, 4), low)};
            for (std::size_t half = 0; half < 2; ++half) {  // elements 4 run + i, then 16 + 4 run + i
                // quarter k: rows 4k .. 4k + 3 (the lane index an immediate, as the instruction needs)
                const __m128i quarters[4] = {
                    _mm512_extracti32x4_epi32(halves[half], 0), _mm512_extracti32x4_epi32(halves[half], 1),
                    _mm512_extracti32x4_epi32(halves[half], 2), _mm512_extracti32x4_epi32(halves[half], 3)};
                for (int k = 0; k < 4; ++k) {
                    const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(quarters[k]));
                    const __m512 x = _mm512_add_ps(_mm512_mul_ps(dq[k], q), mq[k]);
                    float* at = out + 4 * k * columns + b * block + 16 * half + 4 * run;
                    _mm_storeu_ps(at, _mm512_castps512_ps128(x));
                    _mm_storeu_ps(at + columns, _mm512_extractf32x4_ps(x, 1));
                    _mm_storeu_ps(at + 2 * columns, _mm512_extractf32x4_ps(x, 2));
                    _mm_storeu_ps(at + 3 * columns, _mm512_extractf32x4_ps(x, 3));
                }
            }
        }
    }
}

HEADWISE_AVX512 float dot_q4_1_avx512(const BlockQ4_1* w, const QuantizedRow& x) {
    float y;
    rows_q4_1_avx512<1>(reinterpret_cast<const std::byte*>(w), 0, x, &y);
    return y;
}

HEADWISE_AVX512 float dot_q8_0_avx512(const BlockQ8_0* w, const QuantizedRow& x) {
    float y;
    rows_q8_0_avx512<1>(reinterpret_cast<const std::byte*>(w), 0, x, &y);
    return y;
}

// Rows [first, last) four at a time, then one at a time.
template <void (*Four)(const std::byte*, std::size_t, const QuantizedRow&, float*),
          void (*One)(const std::byte*, std::size_t, const QuantizedRow&, float*)>
void rows_avx512(const gguf::TensorInfo& weights, const QuantizedRow& x, std::size_t first, std::size_t last,
                 float* y) {
    const std::size_t stride = weights.row_bytes();
    const std::byte* w = weights.row(first);
    std::size_t r = first;
    for (; r + 4 <= last; r += 4, w += 4 * stride) Four(w, stride, x, y + (r - first));
    for (; r < last; ++r, w += stride) One(w, stride, x, y + (r - first));
}

// ---------------------------------------------------------------------------------------------

Isa best_isa() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma"))
        return Isa::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
    return Isa::scalar;
}

std::atomic<int> chosen{-1};

template <class Block, class Dot>
void rows_with(Dot dot_fn, const gguf::TensorInfo& weights, const QuantizedRow& x, std::size_t first, std::size_t last,
               float* y) {
    const std::size_t stride = weights.row_bytes();
    const std::byte* row = weights.row(first);
    for (std::size_t r = first; r < last; ++r, row += stride)
        y[r - first] = dot_fn(reinterpret_cast<const Block*>(row), x);
}

// Rows [first, last) of a matrix in panels (both multiples of 16), a panel at a time, with the
// instruction set asked for (lesson 12's rungs set each in turn on the same regrouped model).
void rows_in_panels(const gguf::TensorInfo& weights, const QuantizedRow& x, std::size_t first, std::size_t last,
                    float* y, Isa isa) {
    if (first % panel_rows != 0 || last % panel_rows != 0)
        throw std::invalid_argument(fmt::format(
            "rows {} .. {} of {}: a matrix in panels is multiplied 16 rows at a time", first, last, weights.name));
    const std::size_t panel_bytes = panel_rows * weights.row_bytes();
    for (std::size_t r = first; r < last; r += panel_rows, y += panel_rows) {
        const std::byte* panel = weights.data + r / panel_rows * panel_bytes;
        if (isa == Isa::avx512)
            panel_q4_1_avx512(panel, x, y);
        else if (isa == Isa::avx2)
            panel_q4_1_avx2(panel, x, y);
        else
            panel_q4_1_scalar(panel, x, y);
    }
}

void require_fits(gguf::Type type, std::size_t columns, const QuantizedRow& x) {
    if (type != gguf::Type::q4_1 && type != gguf::Type::q8_0)
        throw usage_error(
            fmt::format("no integer dot product for {} weights (Q4_1 and Q8_0 have one)", gguf::to_string(type)));
    if (columns != x.size())
        throw std::invalid_argument(fmt::format("a row of {} weights against {} activations", columns, x.size()));
}

}  // namespace

bool cpu_has(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(best_isa()); }

Isa active_isa() {
    int isa = chosen.load(std::memory_order_relaxed);
    if (isa < 0) {
        isa = static_cast<int>(isa_within(best_isa(), isa_from_environment()));
        chosen.store(isa, std::memory_order_relaxed);
    }
    return static_cast<Isa>(isa);
}

void set_isa(Isa isa) {
    if (!cpu_has(isa)) throw usage_error(fmt::format("this CPU has no {}", to_string(isa)));
    chosen.store(static_cast<int>(isa), std::memory_order_relaxed);
}

float dot(gguf::Type type, const std::byte* w, const QuantizedRow& x) {
    require_fits(type, x.size(), x);
    const Isa isa = active_isa();
    if (type == gguf::Type::q4_1) {
        const auto* q = reinterpret_cast<const BlockQ4_1*>(w);
        if (isa == Isa::avx512) return dot_q4_1_avx512(q, x);
        if (isa == Isa::avx2) return dot_q4_1_avx2(q, x);
        return dot_q4_1_scalar(q, x);
    }
    const auto* q = reinterpret_cast<const BlockQ8_0*>(w);
    if (isa == Isa::avx512) return dot_q8_0_avx512(q, x);
    if (isa == Isa::avx2) return dot_q8_0_avx2(q, x);
    return dot_q8_0_scalar(q, x);
}

void dequantize_rows_fast(const gguf::TensorInfo& weights, std::size_t first, std::size_t last, float* out) {
    if (weights.layout != gguf::Layout::panels16 || active_isa() != Isa::avx512 || first % panel_rows != 0 ||
        last % panel_rows != 0)
        return quant::dequantize_rows(weights, first, last, out);
    if (last > weights.rows())
        throw std::out_of_range(fmt::format("rows {} .. {} of a tensor of {} rows", first, last, weights.rows()));
    const std::size_t columns = weights.columns(), panel_bytes = panel_rows * weights.row_bytes();
    for (std::size_t r = first; r < last; r += panel_rows, out += panel_rows * columns)
        dequantize_panel_avx512(weights.data + r / panel_rows * panel_bytes, columns, out);
}

void matvec_rows(const gguf::TensorInfo& weights, const QuantizedRow& x, std::size_t first, std::size_t last,
                 float* y) {
    require_fits(weights.type, weights.columns(), x);
    if (first >= last) return;
    const Isa isa = active_isa();
    auto avx2_q4 = [](const BlockQ4_1* w, const QuantizedRow& r) { return dot_q4_1_avx2(w, r); };
    auto avx2_q8 = [](const BlockQ8_0* w, const QuantizedRow& r) { return dot_q8_0_avx2(w, r); };
    if (weights.layout == gguf::Layout::panels16) return rows_in_panels(weights, x, first, last, y, isa);
    if (weights.type == gguf::Type::q4_1) {
        if (isa == Isa::avx512)
            return rows_avx512<rows_q4_1_avx512<4>, rows_q4_1_avx512<1>>(weights, x, first, last, y);
        if (isa == Isa::avx2) return rows_with<BlockQ4_1>(avx2_q4, weights, x, first, last, y);
        return rows_with<BlockQ4_1>(dot_q4_1_scalar, weights, x, first, last, y);
    }
    if (isa == Isa::avx512) return rows_avx512<rows_q8_0_avx512<4>, rows_q8_0_avx512<1>>(weights, x, first, last, y);
    if (isa == Isa::avx2) return rows_with<BlockQ8_0>(avx2_q8, weights, x, first, last, y);
    return rows_with<BlockQ8_0>(dot_q8_0_scalar, weights, x, first, last, y);
}

}  // namespace headwise::quant
