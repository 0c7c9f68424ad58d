#include "headwise/fast/fused_attention.hpp"

#include "headwise/fast/blas.hpp"
#include "headwise/fast/huge_pages.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/fast/vexp.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <vector>

namespace headwise::detail {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// With a causal mask, the queries of a tile next to the diagonal go in strips this tall: a strip
// computes only the keys up to its own last query, so of the masked triangle above the diagonal
// only a strip-sized sliver is computed, not a whole tile's.
constexpr std::size_t diagonal_strip = 64;

struct Tile {
    std::size_t b, h, i0, i1;
};

// One worker's scratch, kept from tile to tile.
struct Scratch {
    std::vector<float> scores;  // (rows, keys of one block)
    std::vector<float> acc;     // (rows, d_head): running sum of exp(score - max) * v
    std::vector<float> max;     // (rows): running max of each row's scores
    std::vector<float> sum;     // (rows): running sum of exp(score - max)

    // Row r's online-softmax step over one block of its scores: `block_max` is the block's largest
    // (masked scores already -inf), `row` holds `count` scores in `width` floats. What was summed
    // under the old max is rescaled to the new one, and the row becomes exp(row - max), its sum
    // added; the division by the sum waits until the very end, where a row is d_head numbers long
    // instead of N_k. While the row has seen no key it contributes nothing: the row is zeroed and
    // the step returns false.
    bool online_softmax(std::size_t r, float* row, std::size_t count, std::size_t width, float block_max,
                        std::size_t d_head) {
        const float old_max = max[r];
        const float new_max = std::max(old_max, block_max);
        if (new_max == neg_inf) {
            std::fill(row, row + width, 0.0f);
            return false;
        }
        if (new_max != old_max && old_max != neg_inf) {
            const float alpha = std::exp(old_max - new_max);
            sum[r] *= alpha;
            float* a = acc.data() + r * d_head;
            for (std::size_t c = 0; c < d_head; ++c) a[c] *= alpha;
        }
        max[r] = new_max;
        sum[r] += exp_shifted_sum(row, count, new_max);
        return true;
    }
};

// The backward's (fused_backward.hpp) log-sum-exp of each of the tile's rows, max + log(sum), into
// lse (B, H, N_q) where asked for; -inf for a row that saw no key.
void save_lse(const AttentionShape& s, const Tile& t, const float* max, const float* sum, float* lse) {
    if (lse == nullptr) return;
    float* dst = lse + (t.b * s.heads + t.h) * s.nq + t.i0;
    for (std::size_t r = 0; r < t.i1 - t.i0; ++r) dst[r] = sum[r] > 0.0f ? max[r] + std::log(sum[r]) : neg_inf;
}

class TileRun {
public:
    TileRun(const AttentionShape& s, const Tile& t, Strided<const float> q, Strided<const float> k,
            Strided<const float> v, float scale, const AttentionOptions& o, Scratch& w)
        : s_(s),
          t_(t),
          scale_(scale),
          o_(o),
          w_(w),
          rows_(t.i1 - t.i0),
          qp_(q.data + t.b * q.batch + t.h * q.head + t.i0 * q.row),
          q_row_(q.row),
          kp_(k.data + t.b * k.batch + t.h * k.head),
          k_row_(k.row),
          vp_(v.data + t.b * v.batch + t.h * v.head),
          v_row_(v.row) {
        w_.acc.assign(rows_ * s.d_head, 0.0f);
        w_.max.assign(rows_, neg_inf);
        w_.sum.assign(rows_, 0.0f);
    }

    // Rows [r0, r1) of the tile against keys [j0, j1): scores, masks, online softmax, times V.
    void block(std::size_t r0, std::size_t r1, std::size_t j0, std::size_t j1, bool causal_mask) {
        const std::size_t n = r1 - r0, len = j1 - j0, d_head = s_.d_head;
        w_.scores.resize(std::max(w_.scores.size(), n * len));
        float* const sc = w_.scores.data();
        // scores (n, len) = q (n, d_head) . k^T (d_head, len) * scale
        blas::gemm(false, true, n, len, d_head, scale_, qp_ + r0 * q_row_, q_row_, kp_ + j0 * k_row_, k_row_, 0.0f, sc,
                   len);
        for (std::size_t r = r0; r < r1; ++r) {
            const std::size_t i = t_.i0 + r;
            float* row = sc + (r - r0) * len;
            if (causal_mask)
                for (std::size_t j = std::max(j0, i + 1); j < j1; ++j) row[j - j0] = neg_inf;
            if (o_.attn_mask != nullptr)
                for (std::size_t j = j0; j < j1; ++j)
                    if ((*o_.attn_mask)(i, j)) row[j - j0] = neg_inf;
            if (o_.key_padding_mask != nullptr)
                for (std::size_t j = j0; j < j1; ++j)
                    if ((*o_.key_padding_mask)(t_.b, j)) row[j - j0] = neg_inf;
            w_.online_softmax(r, row, len, len, row_max(row, len), d_head);
        }
        // acc (n, d_head) += exp(scores) (n, len) . v (len, d_head)
        blas::gemm(false, false, n, d_head, len, 1.0f, sc, len, vp_ + j0 * v_row_, v_row_, 1.0f,
                   w_.acc.data() + r0 * d_head, d_head);
    }

    // out rows = acc / sum; a row that saw no key at all (every key masked) is zeros.
    void finish(Strided<float> out, float* lse) const {
        float* dst = out.data + t_.b * out.batch + t_.h * out.head + t_.i0 * out.row;
        save_lse(s_, t_, w_.max.data(), w_.sum.data(), lse);
        for (std::size_t r = 0; r < rows_; ++r) {
            const float inv = w_.sum[r] > 0.0f ? 1.0f / w_.sum[r] : 0.0f;
            const float* a = w_.acc.data() + r * s_.d_head;
            float* o_row = dst + r * out.row;
            for (std::size_t c = 0; c < s_.d_head; ++c) o_row[c] = a[c] * inv;
        }
    }

    std::size_t rows() const { return rows_; }

private:
    const AttentionShape& s_;
    const Tile& t_;
    float scale_;
    const AttentionOptions& o_;
    Scratch& w_;
    std::size_t rows_;
    const float* qp_;
    std::size_t q_row_;
    const float* kp_;
    std::size_t k_row_;
    const float* vp_;
    std::size_t v_row_;
};

void run_tile(const AttentionShape& s, const Tile& t, Strided<const float> q, Strided<const float> k,
              Strided<const float> v, Strided<float> out, float scale, const AttentionOptions& o, const Tiling& tiling,
              Scratch& scratch, float* lse) {
    TileRun run(s, t, q, k, v, scale, o, scratch);
    const std::size_t rows = run.rows();
    // Keys this tile can see: with a causal mask, none beyond its last query.
    const std::size_t keys = o.causal ? std::min(s.nk, t.i1) : s.nk;
    for (std::size_t j0 = 0; j0 < keys; j0 += tiling.keys) {
        const std::size_t j1 = std::min(keys, j0 + tiling.keys);
        if (!o.causal || j1 <= t.i0 + 1) {  // every query of the tile sees every key of the block
            run.block(0, rows, j0, j1, false);
            continue;
        }
        // The block reaches past the tile's first query: strip by strip, each up to its last query.
        for (std::size_t r0 = 0; r0 < rows; r0 += diagonal_strip) {
            const std::size_t r1 = std::min(rows, r0 + diagonal_strip);
            const std::size_t last = std::min(j1, t.i0 + r1);  // keys [j0, last) for this strip
            if (last > j0) run.block(r0, r1, j0, last, true);
        }
    }
    run.finish(out, lse);
}

// ---- The AVX-512 micro-kernels ---------------------------------------------------------------
//
// BLAS packs both operands of every call: for a tile of queries against a block of keys that
// is the block of K (again for every tile of the same head) and the tile's exp(scores). Here K
// is transposed once per head into K^T (d_head, N_k), so a row of 16 keys is one load, and the
// two products are register tiles that read their operands where they lie:
//   scores (6, 32) = q (6, d_head) . K^T (d_head, 32): 12 accumulators, q broadcast from memory,
//   K^T in panels of 32 keys;
//   acc (6, 64) += p (6, len) . v (len, 64): 24 accumulators, four 16-float loads of a v row.
// GCC's vector extensions spell them; target("avx512f") gives 32 zmm registers.

using v16 = float __attribute__((vector_size(64)));
using v16u = float __attribute__((vector_size(64), aligned(4), may_alias));  // an unaligned load

constexpr std::size_t micro_rows = 6;

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

// s (R, len rounded up to 16) = scale * q (R rows, q_row apart) . K^T, for len keys whose K^T
// lies in panels of 32 keys: panel p holds (d_head, 32) contiguously, so the 64 rows of a panel
// are one 8 KiB stream (rows of a plain (d_head, N_k) K^T are N_k floats apart, and at
// N_k = 4096 all of them fall into the same L1 set). A last panel with at most 16 keys to go is
// computed half-wide (causal row groups end anywhere in a panel). Row r's largest score among its first
// valid[r] (at most `len`: with a causal mask, the keys up to its own query) goes to
// row_max[r] on the way, so no second pass over the scores looks for it.
template <std::size_t R>
__attribute__((target("avx512f"))) void micro_scores(const float* q, std::size_t q_row, const float* panels,
                                                     std::size_t d_head, std::size_t len, const std::size_t* valid,
                                                     float scale, float* s, std::size_t ls, float* row_max_out) {
    __m512 m[R];
    for (std::size_t r = 0; r < R; ++r) m[r] = _mm512_set1_ps(neg_inf);
    for (std::size_t j = 0; j < len; j += 32) {
        const float* kt = panels + (j / 32) * 32 * d_head;
        if (len - j <= 16) {  // the last keys fit in the panel's first 16: half the work
            v16 acc[R] = {};
            for (std::size_t c = 0; c < d_head; ++c) {
                const v16 b0 = load16(kt + 32 * c);
                for (std::size_t r = 0; r < R; ++r) acc[r] += q[r * q_row + c] * b0;
            }
            for (std::size_t r = 0; r < R; ++r) {
                const v16 s0 = acc[r] * scale;
                store16(s + r * ls + j, s0);
                m[r] = _mm512_mask_max_ps(m[r], first_lanes(valid[r], j), m[r], __m512(s0));
            }
            break;
        }
        v16 acc[R][2] = {};
        for (std::size_t c = 0; c < d_head; ++c) {
            const v16 b0 = load16(kt + 32 * c), b1 = load16(kt + 32 * c + 16);
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
            m[r] = _mm512_mask_max_ps(m[r], first_lanes(valid[r], j), m[r], __m512(s0));
            m[r] = _mm512_mask_max_ps(m[r], first_lanes(valid[r], j + 16), m[r], __m512(s1));
        }
    }
    for (std::size_t r = 0; r < R; ++r) {
        float lanes[16];
        _mm512_storeu_ps(lanes, m[r]);
        float best = lanes[0];
        for (float l : lanes) best = l > best ? l : best;
        row_max_out[r] = best;
    }
}

// acc (R, 16 * C columns, acc_ld apart) += p (R, len; ls apart) . v (len rows, v_row apart).
template <std::size_t R, std::size_t C>
__attribute__((target("avx512f"))) void micro_pv(const float* p, std::size_t ls, const float* v, std::size_t v_row,
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

template <std::size_t R>
void micro_scores_rows(std::size_t rows, const float* q, std::size_t q_row, const float* panels, std::size_t d_head,
                       std::size_t len, const std::size_t* valid, float scale, float* s, std::size_t ls,
                       float* row_max_out) {
    if constexpr (R > 1) {
        if (rows < R)
            return micro_scores_rows<R - 1>(rows, q, q_row, panels, d_head, len, valid, scale, s, ls, row_max_out);
    }
    micro_scores<R>(q, q_row, panels, d_head, len, valid, scale, s, ls, row_max_out);
}

template <std::size_t R>
void micro_pv_rows(std::size_t rows, const float* p, std::size_t ls, const float* v, std::size_t v_row, std::size_t len,
                   float* acc, std::size_t d_head) {
    if constexpr (R > 1) {
        if (rows < R) return micro_pv_rows<R - 1>(rows, p, ls, v, v_row, len, acc, d_head);
    }
    std::size_t c = 0;
    for (; c + 64 <= d_head; c += 64) micro_pv<R, 4>(p, ls, v + c, v_row, len, acc + c, d_head);
    switch ((d_head - c) / 16) {
        case 3:
            micro_pv<R, 3>(p, ls, v + c, v_row, len, acc + c, d_head);
            break;
        case 2:
            micro_pv<R, 2>(p, ls, v + c, v_row, len, acc + c, d_head);
            break;
        case 1:
            micro_pv<R, 1>(p, ls, v + c, v_row, len, acc + c, d_head);
            break;
        default:
            break;
    }
}

std::size_t round32(std::size_t n) { return (n + 31) / 32 * 32; }

// One tile with the micro-kernels: for each block of keys, micro-rows of 6 queries each compute
// their scores, masks and online softmax in L1, then add exp(scores) . v into the tile's acc.
void run_tile_micro(const AttentionShape& s, const Tile& t, Strided<const float> q, const float* kt_head,
                    Strided<const float> v, Strided<float> out, float scale, const AttentionOptions& o,
                    const Tiling& tiling, Scratch& w, float* lse) {
    const std::size_t rows = t.i1 - t.i0, d_head = s.d_head, block = round32(std::max<std::size_t>(tiling.keys, 32));
    const std::size_t keys = o.causal ? std::min(s.nk, t.i1) : s.nk;
    const bool other_masks = o.attn_mask != nullptr || o.key_padding_mask != nullptr;
    w.acc.assign(rows * d_head, 0.0f);
    w.max.assign(rows, neg_inf);
    w.sum.assign(rows, 0.0f);
    w.scores.resize(std::max(w.scores.size(), micro_rows * block));
    float* const sc = w.scores.data();
    const float* qp = q.data + t.b * q.batch + t.h * q.head + t.i0 * q.row;
    const float* vp = v.data + t.b * v.batch + t.h * v.head;
    for (std::size_t j0 = 0; j0 < keys; j0 += block) {
        const std::size_t j1 = std::min(keys, j0 + block);
        for (std::size_t r0 = 0; r0 < rows; r0 += micro_rows) {
            const std::size_t n = std::min(micro_rows, rows - r0);
            // Keys [j0, last) for these queries: with a causal mask, none past the last of them,
            // and each query's own keys end at valid[r] (its position + 1).
            const std::size_t last = o.causal ? std::min(j1, t.i0 + r0 + n) : j1;
            if (last <= j0) continue;
            const std::size_t len = last - j0;
            std::size_t valid[micro_rows];
            for (std::size_t r = 0; r < n; ++r) {
                const std::size_t end = t.i0 + r0 + r + 1;  // causal: this query sees keys [0, end)
                valid[r] = !o.causal ? len : end > j0 ? std::min(len, end - j0) : 0;
            }
            float block_max[micro_rows];
            micro_scores_rows<micro_rows>(n, qp + r0 * q.row, q.row, kt_head + j0 * d_head, d_head, len, valid, scale,
                                          sc, block, block_max);
            for (std::size_t r = r0; r < r0 + n; ++r) {
                const std::size_t i = t.i0 + r, seen = valid[r - r0];
                float* row = sc + (r - r0) * block;
                float row_best = block_max[r - r0];
                if (other_masks) {  // then the kernel's max may be a masked score: take it again
                    bool masked = false;
                    for (std::size_t j = j0; j < j0 + seen; ++j)
                        if ((o.attn_mask != nullptr && (*o.attn_mask)(i, j)) ||
                            (o.key_padding_mask != nullptr && (*o.key_padding_mask)(t.b, j)))
                            row[j - j0] = neg_inf, masked = true;
                    if (masked) row_best = seen > 0 ? row_max(row, seen) : neg_inf;
                }
                if (!w.online_softmax(r, row, seen, len, row_best, d_head)) continue;  // no key seen yet
                std::fill(row + seen, row + len, 0.0f);  // keys after this query (causal): weight 0
            }
            micro_pv_rows<micro_rows>(n, sc, block, vp + j0 * v.row, v.row, len, w.acc.data() + r0 * d_head, d_head);
        }
    }
    float* dst = out.data + t.b * out.batch + t.h * out.head + t.i0 * out.row;
    save_lse(s, t, w.max.data(), w.sum.data(), lse);
    for (std::size_t r = 0; r < rows; ++r) {
        const float inv = w.sum[r] > 0.0f ? 1.0f / w.sum[r] : 0.0f;
        const float* a = w.acc.data() + r * d_head;
        float* o_row = dst + r * out.row;
        for (std::size_t c = 0; c < d_head; ++c) o_row[c] = a[c] * inv;
    }
}

Kernel default_kernel = Kernel::automatic;

std::size_t rows_per_tile(const AttentionShape& s, const Tiling& tiling) {
    return std::max<std::size_t>(1, std::min(tiling.rows, s.nq));
}

}  // namespace

Kernel choose_kernel(std::size_t d_head) {
    static const bool avx512 = __builtin_cpu_supports("avx512f");
    return avx512 && d_head % 16 == 0 && d_head > 0 ? Kernel::micro_kernel : Kernel::blas;
}

void set_default_kernel(Kernel kernel) { default_kernel = kernel; }

float* thread_workspace(std::size_t n, int slot) {
    // Aligned to 2 MiB huge pages: a first call, e.g. `headwise attend`'s only one, then takes a
    // few dozen page faults instead of thousands. Allocated with operator new, so that a lesson's
    // memory limit (lesson_runtime.cpp replaces every form of it) counts the workspace too.
    constexpr std::align_val_t huge_page{std::size_t{2} << 20};
    struct Block {
        float* data = nullptr;
        std::size_t size = 0;
        ~Block() { ::operator delete(data, huge_page); }
    };
    thread_local Block blocks[2];
    Block& b = blocks[slot];
    if (b.size < n) {
        ::operator delete(b.data, huge_page);
        b.data = nullptr;
        b.size = 0;
        const auto align = static_cast<std::size_t>(huge_page);
        const std::size_t bytes = (n * sizeof(float) + align - 1) / align * align;
        void* p = ::operator new(bytes, huge_page);
        prefer_huge_pages(p, bytes);
        b.data = static_cast<float*>(p);
        b.size = bytes / sizeof(float);
    }
    return b.data;
}

namespace {
Kernel resolve(const Tiling& tiling, std::size_t d_head) {
    const Kernel wanted = tiling.kernel != Kernel::automatic ? tiling.kernel : default_kernel;
    const Kernel possible = choose_kernel(d_head);
    if (wanted == Kernel::automatic) return possible;
    return wanted == Kernel::micro_kernel && possible != Kernel::micro_kernel ? Kernel::blas : wanted;
}
}  // namespace

namespace {
// With enough heads to share out (four per core and more), each core packs one head's K^T and V
// into its own buffer and runs that head's tiles at once, while they are still in its L2 (256 KiB
// at N_k = 512, d_head = 64). Otherwise every head is packed first (one buffer for the call) and the
// tiles of all heads are shared out: a few heads of long sequences still keep every core busy.
bool packs_per_head(const AttentionShape& s) { return s.batch * s.heads >= 4 * worker_count(); }

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

// K^T of head (b, h) in panels of 32 keys, zero-padded past N_k: (N_k / 32, d_head, 32), into
// k_dst; its V as one contiguous (N_k, d_head) block into v_dst. Rows of V in place are
// 3 * d_model floats apart, a stride that keeps only two L1 sets busy. AVX-512 and d_head a
// multiple of 16: the micro-kernels' conditions.
void pack_head(const AttentionShape& s, Strided<const float> k, Strided<const float> v, std::size_t bh, float* k_dst,
               float* v_dst) {
    const float* k_src = k.data + (bh / s.heads) * k.batch + (bh % s.heads) * k.head;
    const float* v_src = v.data + (bh / s.heads) * v.batch + (bh % s.heads) * v.head;
    const std::size_t per_head = s.d_head * round32(s.nk);
    std::fill(k_dst + s.nk / 32 * 32 * s.d_head, k_dst + per_head, 0.0f);
    for (std::size_t j0 = 0; j0 < s.nk; j0 += 16) {  // 16 keys by 16 columns at a time
        float* panel = k_dst + (j0 / 32) * 32 * s.d_head + j0 % 32;
        for (std::size_t c = 0; c < s.d_head; c += 16)
            transpose16(k_src + j0 * k.row + c, k.row, std::min<std::size_t>(16, s.nk - j0), panel + 32 * c, 32);
    }
    for (std::size_t j = 0; j < s.nk; ++j)
        std::copy(v_src + j * v.row, v_src + j * v.row + s.d_head, v_dst + j * s.d_head);
}
}  // namespace

std::size_t fused_attention_scratch_bytes(const AttentionShape& s, const Tiling& tiling) {
    const std::size_t rows = rows_per_tile(s, tiling), keys = std::max<std::size_t>(1, std::min(tiling.keys, s.nk));
    const std::size_t per_worker = (rows * keys + rows * s.d_head + 2 * rows) * sizeof(float);
    // The micro-kernels' K^T and V: 2 * (N_k rounded up to 32, d_head) per head, for every head of
    // the call or, packed per head, for one head per core.
    const std::size_t per_head = 2 * s.d_head * round32(s.nk) * sizeof(float);
    const std::size_t packed = per_head * (packs_per_head(s) ? worker_count() : s.batch * s.heads);
    return worker_count() * per_worker + (resolve(tiling, s.d_head) == Kernel::micro_kernel ? packed : 0);
}

void fused_attention(const AttentionShape& s, Strided<const float> q, Strided<const float> k, Strided<const float> v,
                     Strided<float> out, float scale, const AttentionOptions& options, const Tiling& tiling,
                     float* lse) {
    const Kernel kernel = resolve(tiling, s.d_head);
    const std::size_t rows = rows_per_tile(s, tiling);
    std::vector<Scratch> scratch(worker_count());
    const std::size_t per_head = s.d_head * round32(s.nk);
    if (kernel == Kernel::micro_kernel && packs_per_head(s)) {
        parallel_for(s.batch * s.heads, [&](std::size_t bh, std::size_t worker) {
            float* const kt = thread_workspace(2 * per_head, 1);  // this core's, kept from call to call
            pack_head(s, k, v, bh, kt, kt + per_head);
            const Strided<const float> v_head{kt + per_head, 0, 0, s.d_head};  // one head: strides 0
            for (std::size_t i0 = 0; i0 < s.nq; i0 += rows) {
                const Tile tile{bh / s.heads, bh % s.heads, i0, std::min(s.nq, i0 + rows)};
                run_tile_micro(s, tile, q, kt, v_head, out, scale, options, tiling, scratch[worker], lse);
            }
        });
        return;
    }
    std::vector<Tile> tiles;
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t i0 = 0; i0 < s.nq; i0 += rows) tiles.push_back({b, h, i0, std::min(s.nq, i0 + rows)});
    // Causal tiles near the end of the sequence cost the most: hand those out first.
    if (options.causal)
        std::stable_sort(tiles.begin(), tiles.end(), [](const Tile& a, const Tile& b) { return a.i1 > b.i1; });

    if (kernel == Kernel::blas) {
        parallel_for(tiles.size(), [&](std::size_t t, std::size_t worker) {
            run_tile(s, tiles[t], q, k, v, out, scale, options, tiling, scratch[worker], lse);
        });
        return;
    }
    // Every head packed first: (B * H, N_k / 32, d_head, 32) and (B * H, N_k, d_head).
    float* const kt = thread_workspace(2 * s.batch * s.heads * per_head, 1);
    float* const vp = kt + s.batch * s.heads * per_head;
    parallel_for(s.batch * s.heads,
                 [&](std::size_t bh, std::size_t) { pack_head(s, k, v, bh, kt + bh * per_head, vp + bh * per_head); });
    parallel_for(tiles.size(), [&](std::size_t t, std::size_t worker) {
        const Tile& tile = tiles[t];
        const std::size_t bh = tile.b * s.heads + tile.h;
        // This head's packed V: rows d_head apart (batch and head strides 0: it is one head already).
        const Strided<const float> v_head{vp + bh * per_head, 0, 0, s.d_head};
        run_tile_micro(s, tile, q, kt + bh * per_head, v_head, out, scale, options, tiling, scratch[worker], lse);
    });
}

}  // namespace headwise::detail
