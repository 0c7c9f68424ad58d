#include "headwise/fast/avx512_kernels.hpp"

#include "headwise/fast/fused_tile.hpp"
#include "headwise/fast/fused_workspace.hpp"

#include <immintrin.h>

#include <algorithm>

// GCC's vector extensions spell the kernels; target("avx512f") gives 32 zmm registers.

namespace headwise::fast::detail {

namespace {

using v16 = float __attribute__((vector_size(64)));
using v16u = float __attribute__((vector_size(64), aligned(4), may_alias));  // an unaligned load

static_assert(panel_keys == 32, "a panel is two 16-float vectors wide");

__attribute__((target("avx512f"), always_inline)) inline v16 load16(const float* p) {
    return *reinterpret_cast<const v16u*>(p);
}
__attribute__((target("avx512f"), always_inline)) inline void store16(float* p, v16 x) {
    *reinterpret_cast<v16u*>(p) = x;
}

// The 16-lane mask of the first `valid - from` lanes (all of them past 16, none below 1).
__attribute__((target("avx512f"), always_inline)) inline __mmask16 first_lanes(std::size_t valid, std::size_t from) {
    return valid >= from + 16 ? __mmask16(0xffff) : valid > from ? __mmask16((1u << (valid - from)) - 1u) : 0;
}

// scores for exactly R rows. Panel p of K^T holds (d_head, 32) contiguously, so the 64 rows
// of a panel are one 8 KiB stream (rows of a plain (d_head, N_k) K^T are N_k floats apart, and at
// N_k = 4096 all of them fall into the same L1 set). A last panel with at most 16 keys to go is
// computed half-wide (causal row groups end anywhere in a panel).
template <std::size_t R>
__attribute__((target("avx512f"))) void scores_tile(const float* q, std::size_t q_row, const float* panels,
                                                    std::size_t d_head, std::size_t len, const std::size_t* valid,
                                                    float scale, float* s, std::size_t ls, float* row_max_out) {
    __m512 best[R];  // each row's running max, 16 lanes wide
    for (std::size_t r = 0; r < R; ++r) best[r] = _mm512_set1_ps(neg_inf);
    for (std::size_t j = 0; j < len; j += panel_keys) {
        const float* kt = panels + (j / panel_keys) * panel_keys * d_head;
        if (len - j <= 16) {  // the last keys fit in the panel's first 16: half the work
            v16 acc[R] = {};
            for (std::size_t c = 0; c < d_head; ++c) {
                const v16 b0 = load16(kt + panel_keys * c);
                for (std::size_t r = 0; r < R; ++r) acc[r] += q[r * q_row + c] * b0;
            }
            for (std::size_t r = 0; r < R; ++r) {
                const v16 s0 = acc[r] * scale;
                store16(s + r * ls + j, s0);
                best[r] = _mm512_mask_max_ps(best[r], first_lanes(valid[r], j), best[r], __m512(s0));
            }
            break;
        }
        v16 acc[R][2] = {};
        for (std::size_t c = 0; c < d_head; ++c) {
            const v16 b0 = load16(kt + panel_keys * c), b1 = load16(kt + panel_keys * c + 16);
            for (std::size_t r = 0; r < R; ++r) {
                const float a = q[r * q_row + c];
                acc[r][0] += a * b0;
                acc[r][1] += a * b1;
            }
        }
        // Columns past a row's valid keys (padding past `len`, or keys after its own query) stay
        // out of its max.
        for (std::size_t r = 0; r < R; ++r) {
            const v16 s0 = acc[r][0] * scale, s1 = acc[r][1] * scale;
            store16(s + r * ls + j, s0);
            store16(s + r * ls + j + 16, s1);
            best[r] = _mm512_mask_max_ps(best[r], first_lanes(valid[r], j), best[r], __m512(s0));
            best[r] = _mm512_mask_max_ps(best[r], first_lanes(valid[r], j + 16), best[r], __m512(s1));
        }
    }
    for (std::size_t r = 0; r < R; ++r) {
        float lanes[16];
        _mm512_storeu_ps(lanes, best[r]);
        float m = lanes[0];
        for (float l : lanes) m = l > m ? l : m;
        row_max_out[r] = m;
    }
}

// acc (R, 16 * C columns, acc_ld apart) += p (R, len; ls apart) . v (len rows, v_row apart).
template <std::size_t R, std::size_t C>
__attribute__((target("avx512f"))) void pv_tile(const float* p, std::size_t ls, const float* v, std::size_t v_row,
                                                std::size_t len, float* acc, std::size_t acc_ld) {
    v16 o[R][C];
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t c = 0; c < C; ++c) o[r][c] = load16(acc + r * acc_ld + 16 * c);
    for (std::size_t k = 0; k < len; ++k) {
        v16 b[C];
        for (std::size_t c = 0; c < C; ++c) b[c] = load16(v + k * v_row + 16 * c);
        for (std::size_t r = 0; r < R; ++r) {
            const float a = p[r * ls + k];
            for (std::size_t c = 0; c < C; ++c) o[r][c] += a * b[c];
        }
    }
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t c = 0; c < C; ++c) store16(acc + r * acc_ld + 16 * c, o[r][c]);
}

// acc (R, d_head) += p . v: the widest tiles across d_head, then narrower ones for what is left.
template <std::size_t R>
void pv_columns(const float* p, std::size_t ls, const float* v, std::size_t v_row, std::size_t len, float* acc,
                std::size_t d_head, std::size_t acc_ld) {
    std::size_t c = 0;
    for (; c + 64 <= d_head; c += 64) pv_tile<R, 4>(p, ls, v + c, v_row, len, acc + c, acc_ld);
    switch ((d_head - c) / 16) {
        case 3:
            pv_tile<R, 3>(p, ls, v + c, v_row, len, acc + c, acc_ld);
            break;
        case 2:
            pv_tile<R, 2>(p, ls, v + c, v_row, len, acc + c, acc_ld);
            break;
        case 1:
            pv_tile<R, 1>(p, ls, v + c, v_row, len, acc + c, acc_ld);
            break;
        default:
            break;
    }
}

// out (16, 16; rows ldo apart) = the first 16 columns of in (`rows` rows, ld apart; rows past
// `rows` are zeros), transposed: 16 loads, four rounds of in-register shuffles (pairs of floats,
// then of pairs, then of 128-bit lanes, twice), 16 stores -- instead of 256 scalar stores, each
// to its own cache line of the panel.
// Lanes I... of (x, y): 0-15 name x's lanes, 16-31 y's. GCC (12 and later) and clang both have
// __builtin_shufflevector; the intrinsics' headers trip GCC 12's -Wuninitialized.
template <int... I>
__attribute__((target("avx512f"), always_inline)) inline v16 shuffle(v16 x, v16 y) {
    return __builtin_shufflevector(x, y, I...);
}
// Within each 128-bit lane: x0 y0 x1 y1, x2 y2 x3 y3 (unpcklps / unpckhps) ...
#define HEADWISE_SHUFFLE(name, ...)                                                   \
    __attribute__((target("avx512f"), always_inline)) inline v16 name(v16 x, v16 y) { \
        return shuffle<__VA_ARGS__>(x, y);                                            \
    }
HEADWISE_SHUFFLE(pairs_lo, 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29)
HEADWISE_SHUFFLE(pairs_hi, 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31)
// ... x0 x1 y0 y1, x2 x3 y2 y3 (shufps 0x44 / 0xee) ...
HEADWISE_SHUFFLE(quads_lo, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29)
HEADWISE_SHUFFLE(quads_hi, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31)
// ... and whole lanes: x's lanes 0 and 2 then y's, or lanes 1 and 3 (shuff32x4 0x88 / 0xdd).
HEADWISE_SHUFFLE(lanes_even, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27)
HEADWISE_SHUFFLE(lanes_odd, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31)
#undef HEADWISE_SHUFFLE

__attribute__((target("avx512f"))) void transpose16(const float* in, std::size_t ld, std::size_t rows, float* out,
                                                    std::size_t ldo) {
    v16 r[16], t[16];
    for (std::size_t i = 0; i < 16; ++i) r[i] = i < rows ? load16(in + i * ld) : v16{};
    for (int i = 0; i < 16; i += 2) {  // rows i and i + 1 interleaved, within each 128-bit lane
        t[i] = pairs_lo(r[i], r[i + 1]);
        t[i + 1] = pairs_hi(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {  // 4 rows' elements side by side in each 128-bit lane
        r[i] = quads_lo(t[i], t[i + 2]);
        r[i + 1] = quads_hi(t[i], t[i + 2]);
        r[i + 2] = quads_lo(t[i + 1], t[i + 3]);
        r[i + 3] = quads_hi(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 16; i += 8)  // 128-bit lanes of 8 rows
        for (int j = 0; j < 4; ++j) {
            t[i + j] = lanes_even(r[i + j], r[i + j + 4]);
            t[i + j + 4] = lanes_odd(r[i + j], r[i + j + 4]);
        }
    for (int j = 0; j < 8; ++j) {  // ... of all 16: r[c] is column c
        r[j] = lanes_even(t[j], t[j + 8]);
        r[j + 8] = lanes_odd(t[j], t[j + 8]);
    }
    for (std::size_t c = 0; c < 16; ++c) store16(out + c * ldo, r[c]);
}

struct Avx512 {
    template <std::size_t R>
    static constexpr auto scores = scores_tile<R>;
    template <std::size_t R>
    static constexpr auto pv = pv_columns<R>;
    static constexpr std::size_t block = 16;
    static constexpr auto transpose_block = transpose16;
};

}  // namespace

constinit const RegisterTiles avx512_tiles = tiles_of<Avx512>(Kernel::micro_kernel_avx512, Isa::avx512, 16);

}  // namespace headwise::fast::detail
