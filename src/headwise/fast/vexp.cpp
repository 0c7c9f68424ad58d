#include "headwise/fast/vexp.hpp"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

namespace headwise::detail {

namespace {

[[gnu::always_inline]] inline float exp_one(float x) {
    // exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2].
    constexpr float log2e = 1.44269504088896341f;
    constexpr float ln2_hi = 0.693359375f;  // ln 2 split in two so n * ln2_hi is exact
    constexpr float ln2_lo = -2.12194440e-4f;
    const float in = x;
    // One test covers the float range, -inf (a masked position) and NaN: each of those is
    // computed on as 0 (converting NaN to int is undefined) and replaced at the end. Written as
    // one comparison, it costs three vector instructions where a clamp per case cost seven.
    const bool in_range = in >= -87.0f;
    x = in_range ? std::min(in, 88.0f) : 0.0f;
    // round(x / ln 2) without calling floor(): the +127 bias keeps the value positive after the
    // clamp, so truncation towards zero is floor; k - 127 is then n and k is 2^n's exponent field.
    const std::int32_t k = static_cast<std::int32_t>(x * log2e + 127.5f);
    const float n = static_cast<float>(k - 127);
    const float r = x - n * ln2_hi - n * ln2_lo;
    // Cephes expf minimax polynomial for exp(r) - 1 - r.
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float e = p * (r * r) + r + 1.0f;
    const float scale = std::bit_cast<float>(k << 23);  // 2^n
    const float y = in_range ? e * scale : 0.0f;        // below about -87 the float result is 0
    return in == in ? y : in;                           // NaN in, NaN out: never hidden
}

}  // namespace

// With AVX-512 intrinsics, in 13 instructions per 16 floats where the compiler's vectorisation of
// exp_one took about twice as many (0.60 ns per element here), and the softmax's exponentials were
// 13-16% of the attention. The same range reduction (n = round(y / ln 2), r = y - n ln 2 in two
// parts), but:
//  - one polynomial of degree 5 for e^r itself, 1 + r (c1 + r (c2 + r (c3 + r (c4 + r c5)))),
//    fitted here to e^r on |r| <= ln2 / 2 by minimising the relative error (iteratively reweighted
//    least squares on Chebyshev nodes, c0 held at 1 so that a row's largest score weighs exactly
//    1): below 1.6e-7 in float with FMA, where Cephes' form costs three more instructions;
//  - vscalefps for p * 2^n, which also gives +inf above the float range;
//  - one comparison for the range: "not below -87" is false for -inf (a masked score) and for
//    everything under about -87 (whose exp is a denormal or less: exactly 0, as exp_one), and
//    true for NaN, which then flows through the arithmetic and comes out NaN.
// (GCC 12's unmasked intrinsics for vroundscaleps and vscalefps warn about their undefined
// pass-through operand; the masked forms are the same instructions.)
namespace {

// e^y on the lanes in `lanes` (0 elsewhere, and where y < -87, -inf included; NaN stays NaN).
__attribute__((target("avx512f"), always_inline)) inline __m512 exp16(__m512 y, __mmask16 lanes) {
    constexpr float c1 = 9.999997020e-01f, c2 = 4.999914467e-01f, c3 = 1.666764021e-01f, c4 = 4.189839214e-02f,
                    c5 = 8.290229365e-03f;
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f), ln2_hi = _mm512_set1_ps(0.693359375f),
                 ln2_lo = _mm512_set1_ps(-2.12194440e-4f), lowest = _mm512_set1_ps(-87.0f);
    const __mmask16 kept = _mm512_cmp_ps_mask(y, lowest, _CMP_NLT_UQ) & lanes;  // y >= -87, or NaN
    const __m512 nf =
        _mm512_maskz_roundscale_ps(0xffff, _mm512_mul_ps(y, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_fnmadd_ps(nf, ln2_lo, _mm512_fnmadd_ps(nf, ln2_hi, y));
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(c5), r, _mm512_set1_ps(c4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(kept, p, nf);  // e^r * 2^n; 0 where not kept
}

__attribute__((target("avx512f"), always_inline)) inline __mmask16 first_lanes(std::size_t left) {
    return left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1u);
}

}  // namespace

__attribute__((target("avx512f"))) float exp_shifted_sum_avx512(float* x, std::size_t n, float shift) {
    const __m512 shift_v = _mm512_set1_ps(shift);
    __m512 sum = _mm512_setzero_ps();
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 lanes = first_lanes(n - i);
        const __m512 out = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, x + i), shift_v), lanes);
        _mm512_mask_storeu_ps(x + i, lanes, out);
        sum = _mm512_add_ps(sum, out);
    }
    float lanes_sum[16];
    _mm512_storeu_ps(lanes_sum, sum);
    float total = 0.0f;
    for (float l : lanes_sum) total += l;
    return total;
}

// No sums, so nothing ties one row's exponentials to the next's: short rows (32 keys in lesson
// 11's training) no longer wait on a horizontal sum each.
__attribute__((target("avx512f"))) void exp_shifted_rows_avx512(float* x, std::size_t rows, std::size_t n,
                                                                const float* shifts) {
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = x + r * n;
        if (shifts[r] == -std::numeric_limits<float>::infinity()) {
            std::fill(row, row + n, 0.0f);
            continue;
        }
        const __m512 shift_v = _mm512_set1_ps(shifts[r]);
        for (std::size_t i = 0; i < n; i += 16) {
            const __mmask16 lanes = first_lanes(n - i);
            _mm512_mask_storeu_ps(row + i, lanes,
                                  exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, row + i), shift_v), lanes));
        }
    }
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) float exp_shifted_sum_portable(float* x, std::size_t n,
                                                                                           float shift) {
    for (std::size_t i = 0; i < n; ++i) x[i] = exp_one(x[i] - shift);
    // Sixteen partial sums: vectorisable, and more accurate than one running sum.
    float partial[16] = {};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (std::size_t l = 0; l < 16; ++l) partial[l] += x[i + l];
    float sum = 0.0f;
    for (; i < n; ++i) sum += x[i];
    for (float p : partial) sum += p;
    return sum;
}

namespace {
bool has_avx512() {
    static const bool yes = __builtin_cpu_supports("avx512f");
    return yes;
}
}  // namespace

float exp_shifted_sum(float* x, std::size_t n, float shift) {
    return has_avx512() ? exp_shifted_sum_avx512(x, n, shift) : exp_shifted_sum_portable(x, n, shift);
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) void exp_shifted_rows_portable(float* x, std::size_t rows,
                                                                                           std::size_t n,
                                                                                           const float* shifts) {
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = x + r * n;
        const float shift = shifts[r];
        if (shift == -std::numeric_limits<float>::infinity()) {
            std::fill(row, row + n, 0.0f);
            continue;
        }
        for (std::size_t i = 0; i < n; ++i) row[i] = exp_one(row[i] - shift);
    }
}

__attribute__((target("avx512f"))) void softmax_backward_row_avx512(float* p, float* dp, std::size_t n, float shift,
                                                                    float d, float scale) {
    if (shift == -std::numeric_limits<float>::infinity()) {  // the row saw no key
        std::fill(p, p + n, 0.0f);
        std::fill(dp, dp + n, 0.0f);
        return;
    }
    const __m512 shift_v = _mm512_set1_ps(shift), d_v = _mm512_set1_ps(d), scale_v = _mm512_set1_ps(scale);
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 lanes = first_lanes(n - i);
        const __m512 weight = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, p + i), shift_v), lanes);
        const __m512 dp_v = _mm512_maskz_loadu_ps(lanes, dp + i);
        _mm512_mask_storeu_ps(p + i, lanes, weight);
        _mm512_mask_storeu_ps(dp + i, lanes, _mm512_mul_ps(_mm512_mul_ps(weight, _mm512_sub_ps(dp_v, d_v)), scale_v));
    }
}

void exp_shifted_rows(float* x, std::size_t rows, std::size_t n, const float* shifts) {
    if (has_avx512())
        exp_shifted_rows_avx512(x, rows, n, shifts);
    else
        exp_shifted_rows_portable(x, rows, n, shifts);
}

__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"))) float row_max(const float* x, std::size_t n) {
    // GCC does not vectorise a float max reduction on its own (NaN rules), so it is spelled out
    // with 4-float vectors, four of them at a time. That width exists in every clone: a wider
    // vector type is split into scalars where the hardware lacks it.
    using lanes = float __attribute__((vector_size(16)));
    lanes m4[4];
    for (auto& m : m4) m = lanes{x[0], x[0], x[0], x[0]};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (std::size_t a = 0; a < 4; ++a) {
            lanes v;
            std::memcpy(&v, x + i + 4 * a, sizeof v);
            m4[a] = v > m4[a] ? v : m4[a];
        }
    }
    float m = x[0];
    for (; i < n; ++i) m = x[i] > m ? x[i] : m;
    for (const auto& v : m4)
        for (std::size_t l = 0; l < 4; ++l) m = v[l] > m ? v[l] : m;
    return m;
}

}  // namespace headwise::detail
