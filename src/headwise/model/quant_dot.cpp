#include "headwise/model/quant_dot.hpp"

#include "headwise/base/tensor.hpp"
#include "headwise/model/quant.hpp"

#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>

namespace headwise::quant {

void quantize_activations(const float* x, BlockQ8* out, std::size_t n) {
    for (std::size_t b = 0; b < n / block; ++b, x += block) {
        float amax = 0.0f;
        for (std::size_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float inv = d > 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (std::size_t j = 0; j < block; ++j) {
            const int q = static_cast<int>(std::nearbyint(x[j] * inv));
            out[b].qs[j] = static_cast<std::int8_t>(q);
            sum += q;
        }
        out[b].d = d;
        out[b].s = d * static_cast<float>(sum);
    }
}

namespace {

// ---------------------------------------------------------------------------------------------
// Plain C++: the definition, and what the other two are tested against.

float dot_q4_1_scalar(const BlockQ4_1* w, const BlockQ8* x, std::size_t blocks) {
    float sum = 0.0f;
    for (std::size_t b = 0; b < blocks; ++b) {
        int isum = 0;
        for (std::size_t j = 0; j < block / 2; ++j) {
            isum += (w[b].qs[j] & 0x0F) * x[b].qs[j];
            isum += (w[b].qs[j] >> 4) * x[b].qs[j + block / 2];
        }
        sum += fp16_to_float(w[b].d) * x[b].d * static_cast<float>(isum) + fp16_to_float(w[b].m) * x[b].s;
    }
    return sum;
}

float dot_q8_0_scalar(const BlockQ8_0* w, const BlockQ8* x, std::size_t blocks) {
    float sum = 0.0f;
    for (std::size_t b = 0; b < blocks; ++b) {
        int isum = 0;
        for (std::size_t j = 0; j < block; ++j) isum += w[b].qs[j] * x[b].qs[j];
        sum += fp16_to_float(w[b].d) * x[b].d * static_cast<float>(isum);
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

// The 32 nibbles of a Q4_1 or Q4_0 block as bytes 0..15, in element order (low nibbles first).
HEADWISE_AVX2 inline __m256i nibbles(const std::uint8_t* qs) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

HEADWISE_AVX2 inline __m256i load32(const std::int8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

HEADWISE_AVX2 float dot_q4_1_avx2(const BlockQ4_1* w, const BlockQ8* x, std::size_t blocks) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    float mins = 0.0f;
    std::size_t b = 0;
    auto one = [&](std::size_t i, __m256& acc) HEADWISE_AVX2 {
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(nibbles(w[i].qs), load32(x[i].qs)), ones);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(w[i].d) * x[i].d), _mm256_cvtepi32_ps(p), acc);
        mins += _cvtsh_ss(w[i].m) * x[i].s;
    };
    for (; b + 2 <= blocks; b += 2) {
        one(b, acc0);
        one(b + 1, acc1);
    }
    if (b < blocks) one(b, acc0);
    return hsum(_mm256_add_ps(acc0, acc1)) + mins;
}

HEADWISE_AVX2 float dot_q8_0_avx2(const BlockQ8_0* w, const BlockQ8* x, std::size_t blocks) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    auto one = [&](std::size_t i, __m256& acc) HEADWISE_AVX2 {
        const __m256i qw = load32(w[i].qs);
        const __m256i magnitude = _mm256_sign_epi8(qw, qw);
        const __m256i signed_x = _mm256_sign_epi8(load32(x[i].qs), qw);
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, signed_x), ones);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(w[i].d) * x[i].d), _mm256_cvtepi32_ps(p), acc);
    };
    std::size_t b = 0;
    for (; b + 2 <= blocks; b += 2) {
        one(b, acc0);
        one(b + 1, acc1);
    }
    if (b < blocks) one(b, acc0);
    return hsum(_mm256_add_ps(acc0, acc1));
}

// ---------------------------------------------------------------------------------------------
// AVX-512 with VNNI: two blocks in one 512-bit register; dpbusd multiplies unsigned by signed
// bytes and adds each group of four straight into 32 bits.

#define HEADWISE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

HEADWISE_AVX512 inline __m512i pair(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

HEADWISE_AVX512 inline __m512 scales(float lo, float hi) {
    return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1);
}

HEADWISE_AVX512 float dot_q4_1_avx512(const BlockQ4_1* w, const BlockQ8* x, std::size_t blocks) {
    __m512 acc = _mm512_setzero_ps();
    float mins = 0.0f;
    std::size_t b = 0;
    for (; b + 2 <= blocks; b += 2) {
        const __m512i q4 = pair(nibbles(w[b].qs), nibbles(w[b + 1].qs));
        const __m512i q8 = pair(load32(x[b].qs), load32(x[b + 1].qs));
        const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q4, q8);
        const __m512 d = scales(_cvtsh_ss(w[b].d) * x[b].d, _cvtsh_ss(w[b + 1].d) * x[b + 1].d);
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(p), acc);
        mins += _cvtsh_ss(w[b].m) * x[b].s + _cvtsh_ss(w[b + 1].m) * x[b + 1].s;
    }
    float sum = _mm512_reduce_add_ps(acc) + mins;
    if (b < blocks) sum += dot_q4_1_avx2(w + b, x + b, blocks - b);
    return sum;
}

HEADWISE_AVX512 float dot_q8_0_avx512(const BlockQ8_0* w, const BlockQ8* x, std::size_t blocks) {
    __m512 acc = _mm512_setzero_ps();
    std::size_t b = 0;
    for (; b + 2 <= blocks; b += 2) {
        const __m512i qw = pair(load32(w[b].qs), load32(w[b + 1].qs));
        const __m512i qx = pair(load32(x[b].qs), load32(x[b + 1].qs));
        const __mmask64 negative = _mm512_movepi8_mask(qw);
        const __m512i signed_x = _mm512_mask_sub_epi8(qx, negative, _mm512_setzero_si512(), qx);
        const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(qw), signed_x);
        const __m512 d = scales(_cvtsh_ss(w[b].d) * x[b].d, _cvtsh_ss(w[b + 1].d) * x[b + 1].d);
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(p), acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    if (b < blocks) sum += dot_q8_0_avx2(w + b, x + b, blocks - b);
    return sum;
}

// ---------------------------------------------------------------------------------------------

Isa best_isa() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return Isa::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
    return Isa::scalar;
}

Isa isa_from_environment() {
    const char* asked = std::getenv("HEADWISE_ISA");
    if (asked == nullptr || *asked == '\0') return best_isa();
    const std::string name = asked;
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        if (name != to_string(isa)) continue;
        if (!cpu_has(isa)) throw usage_error(fmt::format("HEADWISE_ISA={}: this CPU has no {} (it has {})", name, name,
                                                         to_string(best_isa())));
        return isa;
    }
    throw usage_error(fmt::format("HEADWISE_ISA={}: not an instruction set headwise knows (scalar, avx2, avx512)", name));
}

std::atomic<int> chosen{-1};

}  // namespace

std::string_view to_string(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
    }
    return "?";
}

bool cpu_has(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(best_isa()); }

Isa active_isa() {
    int isa = chosen.load(std::memory_order_relaxed);
    if (isa < 0) {
        isa = static_cast<int>(isa_from_environment());
        chosen.store(isa, std::memory_order_relaxed);
    }
    return static_cast<Isa>(isa);
}

void set_isa(Isa isa) {
    if (!cpu_has(isa)) throw usage_error(fmt::format("this CPU has no {}", to_string(isa)));
    chosen.store(static_cast<int>(isa), std::memory_order_relaxed);
}

float dot(gguf::Type type, const std::byte* w, const BlockQ8* x, std::size_t blocks) {
    const Isa isa = active_isa();
    if (type == gguf::Type::q4_1) {
        const auto* q = reinterpret_cast<const BlockQ4_1*>(w);
        if (isa == Isa::avx512) return dot_q4_1_avx512(q, x, blocks);
        if (isa == Isa::avx2) return dot_q4_1_avx2(q, x, blocks);
        return dot_q4_1_scalar(q, x, blocks);
    }
    if (type == gguf::Type::q8_0) {
        const auto* q = reinterpret_cast<const BlockQ8_0*>(w);
        if (isa == Isa::avx512) return dot_q8_0_avx512(q, x, blocks);
        if (isa == Isa::avx2) return dot_q8_0_avx2(q, x, blocks);
        return dot_q8_0_scalar(q, x, blocks);
    }
    throw usage_error(fmt::format("no integer dot product for {} weights (Q4_1 and Q8_0 have one)", gguf::to_string(type)));
}

namespace {

template <class Block, class Dot>
void rows_with(Dot dot_fn, const gguf::TensorInfo& weights, const BlockQ8* x, std::size_t first, std::size_t last,
               float* y) {
    const std::size_t blocks = weights.columns() / block;
    for (std::size_t r = first; r < last; ++r)
        y[r - first] = dot_fn(reinterpret_cast<const Block*>(weights.row(r)), x, blocks);
}

}  // namespace

void matvec_rows(const gguf::TensorInfo& weights, const BlockQ8* x, std::size_t first, std::size_t last, float* y) {
    const Isa isa = active_isa();
    if (weights.type == gguf::Type::q4_1) {
        if (isa == Isa::avx512) return rows_with<BlockQ4_1>(dot_q4_1_avx512, weights, x, first, last, y);
        if (isa == Isa::avx2) return rows_with<BlockQ4_1>(dot_q4_1_avx2, weights, x, first, last, y);
        return rows_with<BlockQ4_1>(dot_q4_1_scalar, weights, x, first, last, y);
    }
    if (weights.type == gguf::Type::q8_0) {
        if (isa == Isa::avx512) return rows_with<BlockQ8_0>(dot_q8_0_avx512, weights, x, first, last, y);
        if (isa == Isa::avx2) return rows_with<BlockQ8_0>(dot_q8_0_avx2, weights, x, first, last, y);
        return rows_with<BlockQ8_0>(dot_q8_0_scalar, weights, x, first, last, y);
    }
    throw usage_error(fmt::format("{}: no integer dot product for {} weights (Q4_1 and Q8_0 have one)", weights.name,
                                  gguf::to_string(weights.type)));
}

}  // namespace headwise::quant
