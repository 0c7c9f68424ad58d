// kernels/attention_kernels.cpp -- launch configurations, and the kernels compiled by g++ for the
// CPU emulator (the same .cuh files nvcc compiles in device.cu).
#include "kernels/attention_kernels.hpp"

#include "kernels/dispatch.hpp"
#include "kernels/flash.cuh"
#include "kernels/launch.hpp"
#include "kernels/naive.cuh"
#include "kernels/online.cuh"
#include "kernels/tensor_core.cuh"
#include "kernels/tiled.cuh"
#include "kernels/warp.cuh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace headwise::kernels {

std::string_view name(Version v) {
    // In the order of Version.
    constexpr std::array<std::string_view, versions.size()> names{"naive",       "online", "tiled",    "warp",
                                                                  "tensor_core", "mma",    "pipelined"};
    static_assert(std::none_of(names.begin(), names.end(), [](std::string_view n) { return n.empty(); }),
                  "every version needs its name");
    const auto i = static_cast<std::size_t>(v);
    return i < names.size() ? names[i] : "?";
}

bool supports(Version v, int d_head) {
    if (d_head < 1) return false;
    if (v == Version::naive) return true;
    if (v == Version::tensor_core && d_head % 16 != 0) return false;
    if (needs_sm80(v)) return d_head == 64 || d_head == 128;
    for (int d : compiled_d_heads)
        if (d == d_head) return true;
    return false;
}

float Problem::effective_scale() const { return scale != 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(d_head)); }

double emulation_accesses(const Problem& p) {
    const double pairs = double(p.batch) * double(p.heads) * double(p.seq) * double(p.seq);
    return 38.0 * pairs * double(p.d_head);
}

std::size_t qkv_elements(const Problem& p) {
    return std::size_t(p.batch) * std::size_t(p.heads) * std::size_t(p.seq) * std::size_t(p.d_head);
}

std::size_t scores_elements(const Problem& p) {
    return std::size_t(p.batch) * std::size_t(p.heads) * std::size_t(p.seq) * std::size_t(p.seq);
}

void validate(Version v, const Problem& p, const int* key_len) {
    if (p.batch < 1 || p.heads < 1 || p.seq < 1 || p.d_head < 1)
        throw std::invalid_argument("attention kernels: every size must be at least 1");
    if (p.heads > 65535 || p.batch > 65535)
        throw std::invalid_argument("attention kernels: at most 65535 heads and 65535 sequences (grid y and z)");
    if (v == Version::naive && scores_elements(p) > naive_scratch_limit)
        throw std::invalid_argument("the naive kernel's (B, H, N, N) score scratch would be " +
                                    std::to_string(scores_elements(p) * sizeof(float) >> 20) +
                                    " MiB, above its limit of 8192 MiB (versions 2 and up need no scratch)");
    if (!supports(v, p.d_head))
        throw std::invalid_argument("the " + std::string(name(v)) + " kernel has no build for d_head " +
                                    std::to_string(p.d_head) +
                                    (v == Version::tensor_core ? " (16, 32, 64 or 128)"
                                     : needs_sm80(v)           ? " (64 or 128)"
                                                               : " (8, 16, 32, 64 or 128)"));
    for (int b = 0; key_len != nullptr && b < p.batch; ++b) {
        if (key_len[b] < 0 || key_len[b] > p.seq)
            throw std::invalid_argument("key_len[" + std::to_string(b) + "] = " + std::to_string(key_len[b]) +
                                        " is outside [0, N = " + std::to_string(p.seq) + "]");
    }
}

namespace {

unsigned blocks_for(int rows, int per_block) { return static_cast<unsigned>((rows + per_block - 1) / per_block); }

// The 16-bit versions: q, k, v rounded to T on the host, as a GPU program would upload them.
template <class T>
emulator::LaunchStats emulate_16_bit(Version version, const Problem& p, const Inputs& in, float* out,
                                     emulator::Schedule schedule, dim3 grid, dim3 block) {
    const std::size_t n = qkv_elements(p);
    const std::vector<T> q(in.q, in.q + n), k(in.k, in.k + n), v(in.v, in.v + n);  // each element rounded
    return with_d_head(p.d_head, [&](auto d) {
        constexpr int D = decltype(d)::value;
        using Kernel = void (*)(global_ptr<const T>, global_ptr<const T>, global_ptr<const T>, global_ptr<const int>,
                                global_ptr<float>, AttentionArgs);
        Kernel kernel = nullptr;
        if constexpr (D % 16 == 0)
            if (version == Version::tensor_core) kernel = attention_tensor_core<D, T>;
        if constexpr (D % 64 == 0) {
            if (version == Version::mma) kernel = attention_mma<D, T>;
            if (version == Version::pipelined)
                kernel = with_flash_tiles(
                    p.tiles, [](auto tiles) -> Kernel { return attention_pipelined<D, T, decltype(tiles)::value>; });
        }
        if (kernel == nullptr) return emulator::LaunchStats{};  // validate() refused this d_head already
        return emulator::launch(schedule, grid, block, kernel, global_ptr<const T>(q.data(), n),
                                global_ptr<const T>(k.data(), n), global_ptr<const T>(v.data(), n),
                                global_ptr<const int>(in.key_len, std::size_t(p.batch)), global_ptr<float>(out, n),
                                attention_args(p));
    });
}

}  // namespace

LaunchConfig launch_config(Version v, const Problem& p) {
    validate(v, p);
    // Blocks of `threads` threads, each owning `rows` query rows of one (b, h): grid (N / rows, H, B).
    const auto blocks = [&](int rows, int threads, std::size_t shared_bytes,
                            std::size_t scratch_floats = 0) -> LaunchConfig {
        return {{blocks_for(p.seq, rows), static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch)},
                {static_cast<unsigned>(threads), 1, 1},
                shared_bytes,
                scratch_floats,
                static_cast<unsigned>(rows)};
    };
    switch (v) {
        case Version::naive:
            return blocks(NaiveShape::threads, NaiveShape::threads, 0, scores_elements(p));
        case Version::online:
            return blocks(OnlineShape::threads, OnlineShape::threads, 0);
        case Version::tiled:
            return with_d_head(p.d_head, [&](auto d) -> LaunchConfig {
                using Shape = TiledShape<decltype(d)::value>;
                return blocks(Shape::rows, Shape::rows, Shape::shared_bytes);
            });
        case Version::warp:
            return with_d_head(p.d_head, [&](auto d) -> LaunchConfig {
                using Shape = WarpShape<decltype(d)::value>;
                return blocks(Shape::rows, Shape::threads, Shape::shared_bytes(Shape::pad));
            });
        case Version::tensor_core:
            return with_d_head(p.d_head, [&](auto d) -> LaunchConfig {
                constexpr int D = decltype(d)::value;
                if constexpr (D % 16 == 0) {
                    using Shape = TensorCoreShape<D>;
                    return blocks(Shape::rows, Shape::threads, Shape::shared_bytes);
                } else {
                    throw std::logic_error(
                        "tensor_core: validate() lets no d_head through that is not a multiple of 16");
                }
            });
        case Version::mma:
        case Version::pipelined:
            return with_d_head(p.d_head, [&](auto d) -> LaunchConfig {
                constexpr int D = decltype(d)::value;
                if constexpr (D % 64 == 0) {
                    if (v == Version::mma) {
                        using Shape = FlashShape<D, mma_flash_tiles>;
                        return blocks(Shape::rows, Shape::threads, Shape::mma_shared_bytes);
                    }
                    return with_flash_tiles(p.tiles, [&](auto tiles) {
                        using Shape = FlashShape<D, decltype(tiles)::value>;
                        return blocks(Shape::rows, Shape::threads, Shape::pipelined_shared_bytes);
                    });
                } else {
                    throw std::logic_error("mma, pipelined: validate() lets only d_head 64 and 128 through");
                }
            });
    }
    throw std::invalid_argument("unknown kernel version");
}

emulator::LaunchStats emulate(Version v, const Problem& p, const Inputs& in, float* out, emulator::Schedule schedule) {
    validate(v, p, in.key_len);
    const LaunchConfig cfg = launch_config(v, p);
    const dim3 grid(cfg.grid[0], cfg.grid[1], cfg.grid[2]);
    const dim3 block(cfg.block[0], cfg.block[1], cfg.block[2]);
    const std::size_t n = qkv_elements(p);
    // Global memory as the kernels see it: every buffer with its extent, so indexing is checked.
    const global_ptr<const float> q(in.q, n), k(in.k, n), vv(in.v, n);
    const global_ptr<const int> key_len(in.key_len, static_cast<std::size_t>(p.batch));
    const global_ptr<float> o(out, n);
    const AttentionArgs a = attention_args(p);

    switch (v) {
        case Version::naive: {
            std::vector<float> scratch(cfg.scratch_floats);  // (B, H, N, N)
            const global_ptr<float> s(scratch.data(), scratch.size());
            return emulator::launch(schedule, grid, block, attention_naive, q, k, vv, key_len, s, o, a);
        }
        case Version::online:
            return with_d_head(p.d_head, [&](auto d) {
                return launch_on_emulator(v, p, in, out, schedule, &attention_online<decltype(d)::value>);
            });
        case Version::tiled:
            return with_d_head(p.d_head, [&](auto d) {
                return launch_on_emulator(v, p, in, out, schedule, &attention_tiled<decltype(d)::value>);
            });
        case Version::warp:
            return with_d_head(p.d_head, [&](auto d) {
                return launch_on_emulator(v, p, in, out, schedule, &attention_warp<decltype(d)::value>);
            });
        case Version::tensor_core:
        case Version::mma:
        case Version::pipelined:
            return p.bf16 ? emulate_16_bit<__nv_bfloat16>(v, p, in, out, schedule, grid, block)
                          : emulate_16_bit<__half>(v, p, in, out, schedule, grid, block);
    }
    throw std::invalid_argument("unknown kernel version");
}

emulator::LaunchStats emulate_warp_unpadded(const Problem& p, const Inputs& in, float* out) {
    return with_d_head(p.d_head, [&](auto d) {
        return launch_on_emulator(Version::warp, p, in, out, emulator::Schedule::fibers,
                                  &attention_warp<decltype(d)::value, 0>);
    });
}

emulator::LaunchStats emulate_pipelined_without_wait(const Problem& p, const Inputs& in, float* out) {
    validate(Version::pipelined, p, in.key_len);
    Problem shape = p;  // the default tile shape, whatever p asks for
    shape.tiles = default_flash_tiles;
    const LaunchConfig cfg = launch_config(Version::pipelined, shape);
    const std::size_t n = qkv_elements(p);
    const std::vector<__half> q(in.q, in.q + n), k(in.k, in.k + n), v(in.v, in.v + n);
    return with_d_head(p.d_head, [&](auto d) {
        constexpr int D = decltype(d)::value;
        if constexpr (D % 64 == 0) {
            return emulator::launch(
                dim3(cfg.grid[0], cfg.grid[1], cfg.grid[2]), dim3(cfg.block[0]),
                attention_pipelined<D, __half, default_flash_tiles, false>, global_ptr<const __half>(q.data(), n),
                global_ptr<const __half>(k.data(), n), global_ptr<const __half>(v.data(), n),
                global_ptr<const int>(in.key_len, std::size_t(p.batch)), global_ptr<float>(out, n), attention_args(p));
        } else {
            return emulator::LaunchStats{};  // validate() refused this d_head already
        }
    });
}

emulator::LaunchStats launch_on_emulator(Version v, const Problem& p, const Inputs& in, float* out,
                                         emulator::Schedule schedule, AttentionKernel kernel) {
    validate(v, p, in.key_len);
    const LaunchConfig cfg = launch_config(v, p);
    const std::size_t n = qkv_elements(p);
    return emulator::launch(
        schedule, dim3(cfg.grid[0], cfg.grid[1], cfg.grid[2]), dim3(cfg.block[0], cfg.block[1], cfg.block[2]), kernel,
        global_ptr<const float>(in.q, n), global_ptr<const float>(in.k, n), global_ptr<const float>(in.v, n),
        global_ptr<const int>(in.key_len, std::size_t(p.batch)), global_ptr<float>(out, n), attention_args(p));
}

std::vector<float> rounded_to_16_bits(const float* x, std::size_t n, bool bf16) {
    std::vector<float> r(n);
    for (std::size_t e = 0; e < n; ++e) r[e] = bf16 ? float(__nv_bfloat16(x[e])) : float(__half(x[e]));
    return r;
}

}  // namespace headwise::kernels
