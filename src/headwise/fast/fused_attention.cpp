// Which kernel runs, how the work is cut into tiles and shared between the cores, and what the
// register tiles pack first. One tile's work is fused_tile.cpp's; the register tiles are
// avx512_kernels.cpp's and avx2_kernels.cpp's; the memory they use is fused_workspace.cpp's.
#include "headwise/fast/fused_attention.hpp"

#include "headwise/base/names.hpp"
#include "headwise/fast/avx2_kernels.hpp"
#include "headwise/fast/avx512_kernels.hpp"
#include "headwise/fast/fused_tile.hpp"
#include "headwise/fast/fused_workspace.hpp"
#include "headwise/fast/parallel.hpp"

#include <algorithm>
#include <vector>

namespace headwise::fast {

using namespace detail;  // fast's private tile code (fused_tile.hpp, register_tiles.hpp)

namespace {

Kernel default_kernel = Kernel::automatic;

std::size_t rows_per_tile(const AttentionShape& s, const Tiling& tiling) {
    return std::max<std::size_t>(1, std::min(tiling.rows, s.nq));
}

// With enough heads to share out (four per core and more), each core packs one head's K^T and V
// into its own buffer and runs that head's tiles at once, while they are still in its L2 (256 KiB
// at N_k = 512, d_head = 64). Otherwise every head is packed first (one buffer for the call) and the
// tiles of all heads are shared out: a few heads of long sequences still keep every core busy.
bool packs_per_head(const AttentionShape& s) { return s.batch * s.heads >= 4 * worker_count(); }

// Every (b, h, tile of queries), the causal tiles near the end of the sequence, which cost the
// most, first.
std::vector<Tile> all_tiles(const AttentionShape& s, std::size_t rows, bool causal) {
    std::vector<Tile> tiles;
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t i0 = 0; i0 < s.nq; i0 += rows) tiles.push_back({b, h, i0, std::min(s.nq, i0 + rows)});
    if (causal) std::stable_sort(tiles.begin(), tiles.end(), [](const Tile& a, const Tile& b) { return a.i1 > b.i1; });
    return tiles;
}

// Head (b, h)'s K^T in panels of 32 keys, zero-padded past N_k: (N_k / 32, d_head, 32) into
// k_dst (packed_head_floats); its V as one contiguous (N_k, d_head) block into v_dst. Rows of V
// in place are 3 * d_model floats apart, a stride that keeps only two L1 sets busy.
void pack_head(const RegisterTiles& tiles, const AttentionShape& s, Strided<const float> k, Strided<const float> v,
               std::size_t b, std::size_t h, float* k_dst, float* v_dst) {
    tiles.pack_panels(row_at(k, b, h, 0), k.row, s.nk, s.d_head, k_dst);
    copy_rows(row_at(v, b, h, 0), v.row, s.nk, s.d_head, v_dst, s.d_head);
}

// Whether `kernel`'s tiles run here for this d_head (BLAS always does).
bool runs_here(Kernel kernel, std::size_t d_head) {
    const RegisterTiles* tiles = register_tiles(kernel);
    if (tiles == nullptr) return kernel == Kernel::blas;
    return fast_isa() >= tiles->isa && d_head > 0 && d_head % tiles->d_head_multiple == 0;
}

}  // namespace

std::string_view to_string(Kernel kernel) {
    static constexpr Named<Kernel> names[] = {{Kernel::automatic, "automatic"},
                                              {Kernel::blas, "BLAS"},
                                              {Kernel::micro_kernel_avx2, "AVX2 micro-kernel"},
                                              {Kernel::micro_kernel_avx512, "AVX-512 micro-kernel"}};
    return name_in(names, kernel);
}

const RegisterTiles* detail::register_tiles(Kernel kernel) {
    if (kernel == Kernel::micro_kernel_avx512) return &avx512_tiles;
    if (kernel == Kernel::micro_kernel_avx2) return &avx2_tiles;
    return nullptr;
}

Kernel choose_kernel(std::size_t d_head) {
    for (Kernel widest_first : {Kernel::micro_kernel_avx512, Kernel::micro_kernel_avx2})
        if (runs_here(widest_first, d_head)) return widest_first;
    return Kernel::blas;
}

void set_default_kernel(Kernel kernel) { default_kernel = kernel; }

Kernel resolve_kernel(Kernel asked, std::size_t d_head) {
    const Kernel wanted = asked != Kernel::automatic ? asked : default_kernel;
    if (wanted == Kernel::automatic) return choose_kernel(d_head);
    return runs_here(wanted, d_head) ? wanted : Kernel::blas;
}

std::size_t fused_attention_scratch_bytes(const AttentionShape& s, const Tiling& tiling) {
    const std::size_t rows = rows_per_tile(s, tiling), keys = std::max<std::size_t>(1, std::min(tiling.keys, s.nk));
    const std::size_t per_worker = (rows * keys + rows * s.d_head + 2 * rows) * sizeof(float);
    // The micro-kernels' K^T and V: 2 * (N_k rounded up to 32, d_head) per head, for every head of
    // the call or, packed per head, for one head per core.
    const std::size_t per_head = 2 * packed_head_floats(s) * sizeof(float);
    const std::size_t packed = per_head * (packs_per_head(s) ? worker_count() : s.batch * s.heads);
    return worker_count() * per_worker + (resolve_kernel(tiling.kernel, s.d_head) != Kernel::blas ? packed : 0);
}

void fused_attention(const AttentionShape& s, Strided<const float> q, Strided<const float> k, Strided<const float> v,
                     Strided<float> out, float scale, const AttentionOptions& options, const Tiling& tiling,
                     float* lse) {
    const Kernel kernel = resolve_kernel(tiling.kernel, s.d_head);
    const RegisterTiles* const tiles = register_tiles(kernel);
    const std::size_t rows = rows_per_tile(s, tiling);
    std::vector<TileScratch> scratch(worker_count());
    const std::size_t per_head = packed_head_floats(s);
    if (tiles != nullptr && packs_per_head(s)) {
        parallel_for(s.batch * s.heads, [&](std::size_t bh, std::size_t worker) {
            const std::size_t b = bh / s.heads, h = bh % s.heads;
            float* const k_panels = thread_workspace(2 * per_head, 1);  // this core's, kept from call to call
            pack_head(*tiles, s, k, v, b, h, k_panels, k_panels + per_head);
            const Strided<const float> v_packed{k_panels + per_head, 0, 0, s.d_head};  // one head: strides 0
            for (std::size_t i0 = 0; i0 < s.nq; i0 += rows) {
                const Tile tile{b, h, i0, std::min(s.nq, i0 + rows)};
                run_tile_micro(*tiles, s, tile, q, k_panels, v_packed, out, scale, options, tiling, scratch[worker],
                               lse);
            }
        });
        return;
    }
    const std::vector<Tile> all = all_tiles(s, rows, options.causal);
    if (tiles == nullptr) {
        parallel_for(all.size(), [&](std::size_t t, std::size_t worker) {
            run_tile_blas(s, all[t], q, k, v, out, scale, options, tiling, scratch[worker], lse);
        });
        return;
    }
    // Every head packed first: K^T (B * H, N_k / 32, d_head, 32), then V (B * H, N_k, d_head).
    float* const k_panels = thread_workspace(2 * s.batch * s.heads * per_head, 1);
    float* const v_packed = k_panels + s.batch * s.heads * per_head;
    parallel_for(s.batch * s.heads, [&](std::size_t bh, std::size_t) {
        pack_head(*tiles, s, k, v, bh / s.heads, bh % s.heads, k_panels + bh * per_head, v_packed + bh * per_head);
    });
    parallel_for(all.size(), [&](std::size_t t, std::size_t worker) {
        const Tile& tile = all[t];
        const std::size_t bh = tile.b * s.heads + tile.h;
        // This head's packed V: rows d_head apart (batch and head strides 0: it is one head already).
        const Strided<const float> v_head{v_packed + bh * per_head, 0, 0, s.d_head};
        run_tile_micro(*tiles, s, tile, q, k_panels + bh * per_head, v_head, out, scale, options, tiling,
                       scratch[worker], lse);
    });
}

}  // namespace headwise::fast
