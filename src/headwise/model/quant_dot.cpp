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

namespace headwise::quant {

void QuantizedRow::quantize(const float* x, std::size_t n) {
    if (n % block != 0)
        throw std::invalid_argument(fmt::format("QuantizedRow: {} values are not whole blocks of 32", n));
    if (n > capacity_) {
        q_.reset(static_cast<std::int8_t*>(::operator new[](n, std::align_val_t{64})));
        capacity_ = n;
    }
    n_ = n;
    ds_.resize(2 * (n / block));
    for (std::size_t b = 0; b < n / block; ++b, x += block) {
        float amax = 0.0f;
        for (std::size_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float inv = d > 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (std::size_t j = 0; j < block; ++j) {
            const int q = static_cast<int>(std::nearbyint(x[j] * inv));
            q_[b * block + j] = static_cast<std::int8_t>(q);
            sum += q;
        }
        ds_[2 * b] = d;
        ds_[2 * b + 1] = d * static_cast<float>(sum);
    }
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

#define HEADWISE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

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
template <std::size_t R>
HEADWISE_AVX512 void rows_q4_1_avx512(const std::byte* w, std::size_t stride, const QuantizedRow& x, float* y) {
    // lanes 0-7 take block b's d_w d_x, lanes 8-15 block b + 1's (from d_w d_x, m_w s_x, d_w' d_x', m_w' s_x')
    const __m512i spread = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i low = _mm512_set1_epi8(0x0F);
    __m512 acc[R];
    __m128 scales_and_mins[R];  // lanes 1 and 3 collect the m_w s_x terms
    for (std::size_t r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps(), scales_and_mins[r] = _mm_setzero_ps();
    const std::size_t pairs = x.blocks() / 2;
    for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t b = 0; b < 2 * pairs; b += 2) {
            const __m512i q8 = _mm512_load_si512(x.q() + b * block);
            const __m128 xds = _mm_loadu_ps(x.ds() + 2 * b);  // (d_x, s_x, d_x', s_x')
            const auto* q = reinterpret_cast<const BlockQ4_1*>(w + r * stride) + b;
            // nibbles: [b | b+1] -> lanes (b low, b+1 low, b high, b+1 high) -> (b low, b high, b+1 low, b+1 high)
            const __m256i raw = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(q[1].qs),
                                                    reinterpret_cast<const __m128i*>(q[0].qs));
            const __m512i split = _mm512_inserti64x4(_mm512_zextsi256_si512(raw), _mm256_srli_epi16(raw, 4), 1);
            const __m512i q4 = _mm512_and_si512(_mm512_shuffle_i64x2(split, split, _MM_SHUFFLE(3, 1, 2, 0)), low);
            const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q4, q8);
            // (d_w, m_w, d_w', m_w') * (d_x, s_x, d_x', s_x')
            const __m128 products = _mm_mul_ps(_mm_cvtph_ps(_mm_set_epi32(0, 0, word(&q[1]), word(&q[0]))), xds);
            scales_and_mins[r] = _mm_add_ps(scales_and_mins[r], products);
            acc[r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread, _mm512_zextps128_ps512(products)),
                                     _mm512_cvtepi32_ps(sums), acc[r]);
        }
    }
    const __m128 zero = _mm_setzero_ps();
    for (std::size_t r = 0; r < R; ++r) scales_and_mins[r] = _mm_blend_ps(zero, scales_and_mins[r], 0b1010);
    store_sums<R>(acc, scales_and_mins, y);
    if (2 * pairs < x.blocks())
        for (std::size_t r = 0; r < R; ++r)
            y[r] += dot_q4_1_avx2(reinterpret_cast<const BlockQ4_1*>(w + r * stride), x, 2 * pairs);
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

void matvec_rows(const gguf::TensorInfo& weights, const QuantizedRow& x, std::size_t first, std::size_t last,
                 float* y) {
    require_fits(weights.type, weights.columns(), x);
    if (first >= last) return;
    const Isa isa = active_isa();
    auto avx2_q4 = [](const BlockQ4_1* w, const QuantizedRow& r) { return dot_q4_1_avx2(w, r); };
    auto avx2_q8 = [](const BlockQ8_0* w, const QuantizedRow& r) { return dot_q8_0_avx2(w, r); };
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
