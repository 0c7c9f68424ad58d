#include "headwise/fast/vexp.hpp"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

namespace headwise::fast {

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

// The softmax backward of a row that saw no key (its log-sum-exp `shift` is -inf): P and dS all 0.
// Returns whether the row was one.
bool zero_if_no_key(float* p, float* dp, std::size_t n, float shift) {
    if (shift != -std::numeric_limits<float>::infinity()) return false;
    std::fill(p, p + n, 0.0f);
    std::fill(dp, dp + n, 0.0f);
    return true;
}

}  // namespace

// The plain loops, vectorised by the compiler for x86-64-v3 and for baseline x86-64.
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

__attribute__((target_clones("arch=x86-64-v3", "default"))) void softmax_backward_row_portable(float* p, float* dp,
                                                                                               std::size_t n,
                                                                                               float shift, float d,
                                                                                               float scale) {
    if (zero_if_no_key(p, dp, n, shift)) return;
    for (std::size_t i = 0; i < n; ++i) {
        p[i] = exp_one(p[i] - shift);
        dp[i] = p[i] * (dp[i] - d) * scale;
    }
}

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

__attribute__((target("avx512f"))) void softmax_backward_row_avx512(float* p, float* dp, std::size_t n, float shift,
                                                                    float d, float scale) {
    if (zero_if_no_key(p, dp, n, shift)) return;
    const __m512 shift_v = _mm512_set1_ps(shift), d_v = _mm512_set1_ps(d), scale_v = _mm512_set1_ps(scale);
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 lanes = first_lanes(n - i);
        const __m512 weight = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, p + i), shift_v), lanes);
        const __m512 dp_v = _mm512_maskz_loadu_ps(lanes, dp + i);
        _mm512_mask_storeu_ps(p + i, lanes, weight);
        _mm512_mask_storeu_ps(dp + i, lanes, _mm512_mul_ps(_mm512_mul_ps(weight, _mm512_sub_ps(dp_v, d_v)), scale_v));
    }
}

// With AVX2 and FMA: the AVX-512 path's polynomial and range reduction on 8 lanes. AVX2 has no
// vscalefps and no mask registers, so
//  - 2^n is built in the exponent field, (n + 127) << 23, with y clamped to [-87, 88] first (n
//    then stays in the normal range; exp_one clamps at 88 too), and the clamps are ordered so that
//    a NaN passes through them and comes out NaN;
//  - lanes below -87 (and -inf) are cleared with an AND against one comparison's mask;
//  - a row's last few floats go through an 8-float buffer padded with -inf (whose exponential is
//    0, so the padding adds nothing to a sum): vmaskmovps, AVX2's masked store, is microcoded on
//    AMD's Zen cores, dozens of cycles a row.
namespace {

__attribute__((target("avx2,fma"), always_inline)) inline __m256 exp8(__m256 y) {
    constexpr float c1 = 9.999997020e-01f, c2 = 4.999914467e-01f, c3 = 1.666764021e-01f, c4 = 4.189839214e-02f,
                    c5 = 8.290229365e-03f;
    const __m256 kept = _mm256_cmp_ps(y, _mm256_set1_ps(-87.0f), _CMP_NLT_UQ);  // y >= -87, or NaN
    // max(lo, y) and min(hi, x) return their second operand when one is NaN: NaN stays NaN.
    const __m256 x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), y));
    const __m256 nf = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 r =
        _mm256_fnmadd_ps(nf, _mm256_set1_ps(-2.12194440e-4f), _mm256_fnmadd_ps(nf, _mm256_set1_ps(0.693359375f), x));
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(c5), r, _mm256_set1_ps(c4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nf), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(kept, _mm256_mul_ps(p, _mm256_castsi256_ps(two_n)));  // e^r * 2^n; 0 where not kept
}

// x[0..8) = exp(x - shift); returns them.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 exp_step(float* x, __m256 shift) {
    const __m256 out = exp8(_mm256_sub_ps(_mm256_loadu_ps(x), shift));
    _mm256_storeu_ps(x, out);
    return out;
}

// p[0..8) = P = exp(p - shift), dp[0..8) = dS = P (dp - d) scale.
__attribute__((target("avx2,fma"), always_inline)) inline void backward_step(float* p, float* dp, __m256 shift,
                                                                             __m256 d, __m256 scale) {
    const __m256 weight = exp_step(p, shift);
    _mm256_storeu_ps(dp, _mm256_mul_ps(_mm256_mul_ps(weight, _mm256_sub_ps(_mm256_loadu_ps(dp), d)), scale));
}

// The last `left` (< 8) floats of a row in a buffer padded with `pad`; to() writes them back.
struct Tail {
    float v[8];
    Tail(const float* x, std::size_t left, float pad) {
        std::fill(v, v + 8, pad);
        std::copy(x, x + left, v);
    }
    void to(float* x, std::size_t left) const { std::copy(v, v + left, x); }
};

__attribute__((target("avx2"), always_inline)) inline float sum8(__m256 x) {
    float lanes[8];
    _mm256_storeu_ps(lanes, x);
    float total = 0.0f;
    for (float l : lanes) total += l;
    return total;
}

constexpr float pad_inf = -std::numeric_limits<float>::infinity();

}  // namespace

__attribute__((target("avx2,fma"))) float exp_shifted_sum_avx2(float* x, std::size_t n, float shift) {
    const __m256 shift_v = _mm256_set1_ps(shift);
    __m256 sum = _mm256_setzero_ps();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) sum = _mm256_add_ps(sum, exp_step(x + i, shift_v));
    if (i < n) {
        Tail tail(x + i, n - i, pad_inf);
        sum = _mm256_add_ps(sum, exp_step(tail.v, shift_v));
        tail.to(x + i, n - i);
    }
    return sum8(sum);
}

__attribute__((target("avx2,fma"))) void exp_shifted_rows_avx2(float* x, std::size_t rows, std::size_t n,
                                                               const float* shifts) {
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = x + r * n;
        if (shifts[r] == -std::numeric_limits<float>::infinity()) {
            std::fill(row, row + n, 0.0f);
            continue;
        }
        const __m256 shift_v = _mm256_set1_ps(shifts[r]);
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8) exp_step(row + i, shift_v);
        if (i < n) {
            Tail tail(row + i, n - i, pad_inf);
            exp_step(tail.v, shift_v);
            tail.to(row + i, n - i);
        }
    }
}

__attribute__((target("avx2,fma"))) void softmax_backward_row_avx2(float* p, float* dp, std::size_t n, float shift,
                                                                   float d, float scale) {
    if (zero_if_no_key(p, dp, n, shift)) return;
    const __m256 shift_v = _mm256_set1_ps(shift), d_v = _mm256_set1_ps(d), scale_v = _mm256_set1_ps(scale);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) backward_step(p + i, dp + i, shift_v, d_v, scale_v);
    if (i < n) {
        Tail p_tail(p + i, n - i, pad_inf), dp_tail(dp + i, n - i, 0.0f);
        backward_step(p_tail.v, dp_tail.v, shift_v, d_v, scale_v);
        p_tail.to(p + i, n - i);
        dp_tail.to(dp + i, n - i);
    }
}

// The largest of x[0..n): GCC does not vectorise a float max reduction on its own (NaN rules), so
// it is spelled out with vectors of W floats, four of them at a time, then one, then the last few
// one by one. Inlined into each instruction set's function below, which gives it its registers.
// (GCC ignores vector_size on a type that depends on a template parameter: one per width.)
template <std::size_t W>
struct Lanes;
template <>
struct Lanes<4> {
    using type = float __attribute__((vector_size(16)));
};
template <>
struct Lanes<8> {
    using type = float __attribute__((vector_size(32)));
};
template <>
struct Lanes<16> {
    using type = float __attribute__((vector_size(64)));
};

template <std::size_t W>
[[gnu::always_inline]] inline float row_max_lanes(const float* x, std::size_t n) {
    using lanes = typename Lanes<W>::type;
    lanes m[4];
    for (auto& v : m)
        for (std::size_t l = 0; l < W; ++l) v[l] = x[0];
    std::size_t i = 0;
    for (; i + 4 * W <= n; i += 4 * W)
        for (std::size_t a = 0; a < 4; ++a) {
            lanes v;
            std::memcpy(&v, x + i + W * a, sizeof v);
            m[a] = v > m[a] ? v : m[a];  // a NaN in v compares false: passed over
        }
    for (; i + W <= n; i += W) {
        lanes v;
        std::memcpy(&v, x + i, sizeof v);
        m[0] = v > m[0] ? v : m[0];
    }
    float best = x[0];
    for (; i < n; ++i) best = x[i] > best ? x[i] : best;
    for (const auto& v : m)
        for (std::size_t l = 0; l < W; ++l) best = v[l] > best ? v[l] : best;
    return best;
}

// 4-float vectors exist in every clone (a wider vector type is split into scalars where the
// hardware lacks it).
__attribute__((target_clones("arch=x86-64-v3", "default"))) float row_max_portable(const float* x, std::size_t n) {
    return row_max_lanes<4>(x, n);
}
__attribute__((target("avx2"))) float row_max_avx2(const float* x, std::size_t n) { return row_max_lanes<8>(x, n); }
__attribute__((target("avx512f"))) float row_max_avx512(const float* x, std::size_t n) {
    return row_max_lanes<16>(x, n);
}

const RowOps& row_ops(Isa isa) {
    static const RowOps scalar{exp_shifted_sum_portable, exp_shifted_rows_portable, softmax_backward_row_portable,
                               row_max_portable};
    static const RowOps avx2{exp_shifted_sum_avx2, exp_shifted_rows_avx2, softmax_backward_row_avx2, row_max_avx2};
    static const RowOps avx512{exp_shifted_sum_avx512, exp_shifted_rows_avx512, softmax_backward_row_avx512,
                               row_max_avx512};
    switch (isa) {
        case Isa::avx512:
            return avx512;
        case Isa::avx2:
            return avx2;
        case Isa::scalar:
            break;
    }
    return scalar;
}

float exp_shifted_sum(float* x, std::size_t n, float shift) { return row_ops(fast_isa()).exp_shifted_sum(x, n, shift); }

void exp_shifted_rows(float* x, std::size_t rows, std::size_t n, const float* shifts) {
    row_ops(fast_isa()).exp_shifted_rows(x, rows, n, shifts);
}

void softmax_backward_row(float* p, float* dp, std::size_t n, float shift, float d, float scale) {
    row_ops(fast_isa()).softmax_backward_row(p, dp, n, shift, d, scale);
}

float row_max(const float* x, std::size_t n) { return row_ops(fast_isa()).row_max(x, n); }

}  // namespace headwise::fast
