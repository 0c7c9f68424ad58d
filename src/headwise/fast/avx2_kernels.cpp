#include "headwise/fast/avx2_kernels.hpp"

#include "headwise/fast/fused_tile.hpp"
#include "headwise/fast/fused_workspace.hpp"

#include <immintrin.h>

#include <algorithm>

// Intrinsics spell the kernels (an FMA is then an FMA whatever the compiler's contraction
// setting); target("avx2,fma") lets them use the 16 ymm registers.

namespace headwise::fast::detail {

namespace {

static_assert(panel_keys == 32, "a panel is two halves of 16 keys, each two 8-float vectors wide");
constexpr std::size_t half_panel = 16;

// best (8 lanes, in memory) = max(best, the 8 scores s of keys from..from+7 that the row may see: its
// first `valid`). Columns past a row's valid keys (padding past `len`, or keys after its own
// query) stay out of its max.
__attribute__((target("avx2"), always_inline)) inline void keep_max(float* best, __m256 s, std::size_t valid,
                                                                    std::size_t from) {
    const int keep = valid > from ? static_cast<int>(std::min<std::size_t>(valid - from, 8)) : 0;
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(keep), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 seen = _mm256_blendv_ps(_mm256_set1_ps(neg_inf), s, _mm256_castsi256_ps(lanes));
    _mm256_store_ps(best, _mm256_max_ps(_mm256_load_ps(best), seen));
}

__attribute__((target("avx2"), always_inline)) inline float lanes_max(__m256 x) {
    float lanes[8];
    _mm256_storeu_ps(lanes, x);
    float m = lanes[0];
    for (float l : lanes) m = l > m ? l : m;
    return m;
}

// scores for exactly R rows, 16 keys (half a panel) at a time: 2R accumulators. Each row's running
// maximum lives in memory (best), updated once per 16 keys, so that the d_head loop keeps all
// 15 of its registers.
template <std::size_t R>
__attribute__((target("avx2,fma"))) void scores_tile(const float* q, std::size_t q_row, const float* panels,
                                                     std::size_t d_head, std::size_t len, const std::size_t* valid,
                                                     float scale, float* s, std::size_t ls, float* row_max_out) {
    alignas(32) float best[R][8];
    for (std::size_t r = 0; r < R; ++r) _mm256_store_ps(best[r], _mm256_set1_ps(neg_inf));
    const __m256 scale_v = _mm256_set1_ps(scale);
    for (std::size_t j = 0; j < len; j += half_panel) {
        const float* kt = panels + (j / panel_keys) * panel_keys * d_head + j % panel_keys;
        if (len - j <= 8) {  // the last keys fit in one vector: half the work
            __m256 acc[R];
            for (std::size_t r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
            for (std::size_t c = 0; c < d_head; ++c) {
                const __m256 b0 = _mm256_loadu_ps(kt + panel_keys * c);
                for (std::size_t r = 0; r < R; ++r)
                    acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(q[r * q_row + c]), b0, acc[r]);
            }
            for (std::size_t r = 0; r < R; ++r) {
                const __m256 s0 = _mm256_mul_ps(acc[r], scale_v);
                _mm256_storeu_ps(s + r * ls + j, s0);
                keep_max(best[r], s0, valid[r], j);
            }
            break;
        }
        __m256 acc[R][2];
        for (std::size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
        for (std::size_t c = 0; c < d_head; ++c) {
            const __m256 b0 = _mm256_loadu_ps(kt + panel_keys * c), b1 = _mm256_loadu_ps(kt + panel_keys * c + 8);
            for (std::size_t r = 0; r < R; ++r) {
                const __m256 a = _mm256_set1_ps(q[r * q_row + c]);
                acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
            }
        }
        for (std::size_t r = 0; r < R; ++r) {
            const __m256 s0 = _mm256_mul_ps(acc[r][0], scale_v), s1 = _mm256_mul_ps(acc[r][1], scale_v);
            _mm256_storeu_ps(s + r * ls + j, s0);
            _mm256_storeu_ps(s + r * ls + j + 8, s1);
            keep_max(best[r], s0, valid[r], j);
            keep_max(best[r], s1, valid[r], j + 8);
        }
    }
    for (std::size_t r = 0; r < R; ++r) row_max_out[r] = lanes_max(_mm256_load_ps(best[r]));
}

// acc (R, 8 * C columns, acc_ld apart) += p (R, len; ls apart) . v (len rows, v_row apart).
template <std::size_t R, std::size_t C>
__attribute__((target("avx2,fma"))) void pv_tile(const float* p, std::size_t ls, const float* v, std::size_t v_row,
                                                 std::size_t len, float* acc, std::size_t acc_ld) {
    __m256 o[R][C];
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t c = 0; c < C; ++c) o[r][c] = _mm256_loadu_ps(acc + r * acc_ld + 8 * c);
    for (std::size_t k = 0; k < len; ++k) {
        __m256 b[C];
        for (std::size_t c = 0; c < C; ++c) b[c] = _mm256_loadu_ps(v + k * v_row + 8 * c);
        for (std::size_t r = 0; r < R; ++r) {
            const __m256 a = _mm256_set1_ps(p[r * ls + k]);
            for (std::size_t c = 0; c < C; ++c) o[r][c] = _mm256_fmadd_ps(a, b[c], o[r][c]);
        }
    }
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t c = 0; c < C; ++c) _mm256_storeu_ps(acc + r * acc_ld + 8 * c, o[r][c]);
}

// acc (R, d_head) += p . v: the widest tiles across d_head, then narrower ones for what is left.
template <std::size_t R>
void pv_columns(const float* p, std::size_t ls, const float* v, std::size_t v_row, std::size_t len, float* acc,
                std::size_t d_head, std::size_t acc_ld) {
    std::size_t c = 0;
    for (; c + 16 <= d_head; c += 16) pv_tile<R, 2>(p, ls, v + c, v_row, len, acc + c, acc_ld);
    if (c < d_head) pv_tile<R, 1>(p, ls, v + c, v_row, len, acc + c, acc_ld);  // d_head % 16 == 8
}

// out (8, 8; rows ldo apart) = the first 8 columns of in (`rows` rows, ld apart; rows past `rows`
// are zeros, and with none `in` is not read), transposed in registers: pairs of rows interleaved
// (unpcklps / unpckhps), then pairs of pairs (shufps), then the 128-bit halves swapped (vperm2f128).
__attribute__((target("avx2"))) void transpose8(const float* in, std::size_t ld, std::size_t rows, float* out,
                                                std::size_t ldo) {
    __m256 r[8], t[8];
    for (std::size_t i = 0; i < 8; ++i) r[i] = i < rows ? _mm256_loadu_ps(in + i * ld) : _mm256_setzero_ps();
    for (int i = 0; i < 8; i += 2) {  // rows i and i + 1 interleaved, within each 128-bit lane
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {  // 4 rows' elements side by side: columns c | c + 4 of rows i..i+3
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int c = 0; c < 4; ++c) {  // rows 0-3 and 4-7 of column c, then of column c + 4
        _mm256_storeu_ps(out + c * ldo, _mm256_permute2f128_ps(r[c], r[c + 4], 0x20));
        _mm256_storeu_ps(out + (c + 4) * ldo, _mm256_permute2f128_ps(r[c], r[c + 4], 0x31));
    }
}

struct Avx2 {
    template <std::size_t R>
    static constexpr auto scores = scores_tile<R>;
    template <std::size_t R>
    static constexpr auto pv = pv_columns<R>;
    static constexpr std::size_t block = 8;
    static constexpr auto transpose_block = transpose8;
};

}  // namespace

constinit const RegisterTiles avx2_tiles = tiles_of<Avx2>(Kernel::micro_kernel_avx2, Isa::avx2, 8);

}  // namespace headwise::fast::detail
