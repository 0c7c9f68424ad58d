// kernels/device.cu -- kernels/device.hpp with nvcc: the .cuh kernels launched on a real GPU.
#include "kernels/device.hpp"

#include "kernels/backward_flash.cuh"
#include "kernels/backward_naive.cuh"
#include "kernels/dispatch.hpp"
#include "kernels/flash.cuh"
#include "kernels/launch.hpp"
#include "kernels/naive.cuh"
#include "kernels/online.cuh"
#include "kernels/tensor_core.cuh"
#include "kernels/tiled.cuh"
#include "kernels/warp.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace headwise::kernels::device {

namespace {

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        throw std::runtime_error(std::string(what) + ": CUDA error " + std::to_string(static_cast<int>(e)) + " (" +
                                 cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")");
    }
}

// One device allocation, freed on every path out.
template <class T>
class Buffer {
public:
    explicit Buffer(std::size_t n) : n_(n) {
        check(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
    }
    Buffer(const T* host, std::size_t n) : Buffer(n) {
        check(cudaMemcpy(p_, host, n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
    }
    explicit Buffer(const std::vector<T>& host) : Buffer(host.data(), host.size()) {}
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { cudaFree(p_); }
    T* get() const { return p_; }
    void copy_to(T* host) const {
        check(cudaMemcpy(host, p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
    }

private:
    T* p_ = nullptr;
    std::size_t n_;
};

struct Event {
    Event() { check(cudaEventCreate(&e), "cudaEventCreate"); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() { cudaEventDestroy(e); }
    cudaEvent_t e{};
};

// `warmup` untimed calls of launch_once, then `repeats` timed ones, each between two cudaEvents:
// the median and the fastest, in milliseconds.
template <class F>
Timing timed(int warmup, int repeats, F&& launch_once) {
    for (int r = 0; r < warmup; ++r) launch_once();
    check(cudaDeviceSynchronize(), "warm-up launches");
    std::vector<double> ms;
    Event start, stop;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
        check(cudaEventRecord(start.e), "cudaEventRecord");
        launch_once();
        check(cudaEventRecord(stop.e), "cudaEventRecord");
        check(cudaEventSynchronize(stop.e), "kernel execution");
        float t = 0.0f;
        check(cudaEventElapsedTime(&t, start.e, stop.e), "cudaEventElapsedTime");
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    Timing timing;
    timing.median_ms = ms[ms.size() / 2];
    timing.min_ms = ms.front();
    return timing;
}

// The problem's buffers on the device, ready to launch any version on.
struct Problem_on_device {
    Problem_on_device(Version v, const Problem& p, const Inputs& in)
        : cfg(launch_config(v, p)),
          n(qkv_elements(p)),
          q(in.q, n),
          k(in.k, n),
          v(in.v, n),
          key_len(in.key_len, static_cast<std::size_t>(p.batch)),
          scratch(cfg.scratch_floats),
          out(n),
          q16(sixteen_bit(v) ? to_half(in.q, n) : std::vector<__half>()),
          k16(sixteen_bit(v) ? to_half(in.k, n) : std::vector<__half>()),
          v16(sixteen_bit(v) ? to_half(in.v, n) : std::vector<__half>()),
          qb(bf16_inputs(v, p) ? to_bf16(in.q, n) : std::vector<__nv_bfloat16>()),
          kb(bf16_inputs(v, p) ? to_bf16(in.k, n) : std::vector<__nv_bfloat16>()),
          vb(bf16_inputs(v, p) ? to_bf16(in.v, n) : std::vector<__nv_bfloat16>()),
          bf16(bf16_inputs(v, p)),
          args(attention_args(p)) {}

    // The tensor-core kernel's inputs: each element rounded to fp16 on the host (round to nearest
    // even, the same bits as the emulator's), then uploaded as fp16.
    static std::vector<__half> to_half(const float* x, std::size_t n) {
        std::vector<__half> h(n);
        for (std::size_t e = 0; e < n; ++e) h[e] = __float2half_rn(x[e]);
        return h;
    }

    // Version 7 takes bf16 inputs when the problem asks (the others run fp16 on a GPU).
    static bool bf16_inputs(Version v, const Problem& p) { return v == Version::pipelined && p.bf16; }
    static std::vector<__nv_bfloat16> to_bf16(const float* x, std::size_t n) {
        std::vector<__nv_bfloat16> h(n);
        for (std::size_t e = 0; e < n; ++e) h[e] = __float2bfloat16_rn(x[e]);
        return h;
    }

    LaunchConfig cfg;
    std::size_t n;
    Buffer<float> q, k, v;
    Buffer<int> key_len;
    Buffer<float> scratch, out;
    Buffer<__half> q16, k16, v16;      // tensor_core only (empty otherwise)
    Buffer<__nv_bfloat16> qb, kb, vb;  // pipelined with bf16 inputs only (empty otherwise)
    bool bf16;
    AttentionArgs args;
};

// Calls f(kernel) with the kernel function for `v` at this d_head (pipelined: in p.tiles's
// shape), so callers can both launch it and ask the runtime about it.
template <class F>
void with_kernel(Version v, const Problem& p, bool bf16, F&& f) {
    const int d_head = p.d_head;
    if (v == Version::naive) return f(&attention_naive);
    with_d_head(d_head, [&](auto d) {
        constexpr int D = decltype(d)::value;
        switch (v) {
            case Version::online:
                f(&attention_online<D>);
                break;
            case Version::tiled:
                f(&attention_tiled<D>);
                break;
            case Version::warp:
                f(&attention_warp<D>);
                break;
            case Version::tensor_core:
                if constexpr (D % 16 == 0) f(&attention_tensor_core<D, __half>);
                break;
            case Version::naive:
                break;
            case Version::mma:
                if constexpr (D % 64 == 0) f(&attention_mma<D, __half>);
                break;
            case Version::pipelined:
                if constexpr (D % 64 == 0) {
                    with_flash_tiles(p.tiles, [&](auto tiles) {
                        constexpr FlashTiles Tiles = decltype(tiles)::value;
                        if (bf16)
                            f(&attention_pipelined<D, __nv_bfloat16, Tiles>);
                        else
                            f(&attention_pipelined<D, __half, Tiles>);
                    });
                }
                break;
        }
    });
}

void launch(Version v, const Problem& p, Problem_on_device& dev) {
    const dim3 grid(dev.cfg.grid[0], dev.cfg.grid[1], dev.cfg.grid[2]);
    const dim3 block(dev.cfg.block[0], dev.cfg.block[1], dev.cfg.block[2]);
    if (v == Version::naive) {
        attention_naive<<<grid, block>>>(dev.q.get(), dev.k.get(), dev.v.get(), dev.key_len.get(), dev.scratch.get(),
                                         dev.out.get(), dev.args);
    } else {
        with_d_head(p.d_head, [&](auto d) {
            constexpr int D = decltype(d)::value;
            switch (v) {
                case Version::online:
                    attention_online<D><<<grid, block>>>(dev.q.get(), dev.k.get(), dev.v.get(), dev.key_len.get(),
                                                         dev.out.get(), dev.args);
                    break;
                case Version::tiled:
                    attention_tiled<D><<<grid, block>>>(dev.q.get(), dev.k.get(), dev.v.get(), dev.key_len.get(),
                                                        dev.out.get(), dev.args);
                    break;
                case Version::warp:
                    attention_warp<D><<<grid, block>>>(dev.q.get(), dev.k.get(), dev.v.get(), dev.key_len.get(),
                                                       dev.out.get(), dev.args);
                    break;
                case Version::tensor_core:
                    if constexpr (D % 16 == 0)
                        attention_tensor_core<D, __half><<<grid, block>>>(dev.q16.get(), dev.k16.get(), dev.v16.get(),
                                                                          dev.key_len.get(), dev.out.get(), dev.args);
                    break;
                case Version::naive:
                    break;
                case Version::mma:
                    if constexpr (D % 64 == 0)
                        attention_mma<D, __half><<<grid, block>>>(dev.q16.get(), dev.k16.get(), dev.v16.get(),
                                                                  dev.key_len.get(), dev.out.get(), dev.args);
                    break;
                case Version::pipelined:
                    if constexpr (D % 64 == 0) {
                        with_flash_tiles(p.tiles, [&](auto tiles) {
                            constexpr FlashTiles Tiles = decltype(tiles)::value;
                            if (dev.bf16)
                                attention_pipelined<D, __nv_bfloat16, Tiles>
                                    <<<grid, block>>>(dev.qb.get(), dev.kb.get(), dev.vb.get(), dev.key_len.get(),
                                                      dev.out.get(), dev.args);
                            else
                                attention_pipelined<D, __half, Tiles><<<grid, block>>>(dev.q16.get(), dev.k16.get(),
                                                                                       dev.v16.get(), dev.key_len.get(),
                                                                                       dev.out.get(), dev.args);
                        });
                    }
                    break;
            }
        });
    }
    check(cudaGetLastError(), "kernel launch");
}

}  // namespace

namespace {

// mma.sync m16n8k16 and cp.async exist from sm_80 on: below it versions 6 and 7 would trap.
void require_sm80(Version v) {
    if (!needs_sm80(v)) return;
    int device = 0, major = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
    if (major < 8)
        throw std::runtime_error("the " + std::string(name(v)) +
                                 " kernel needs mma.sync m16n8k16 and cp.async: compute capability 8.0 or later");
}

}  // namespace

bool built_with_nvcc() { return true; }

Status status() {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorInsufficientDriver) {
        int runtime = 0;
        cudaRuntimeGetVersion(&runtime);
        return {false, "no NVIDIA driver is loaded, or it is older than CUDA " + std::to_string(runtime / 1000) + "." +
                           std::to_string(runtime % 1000 / 10) + " needs"};
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) return {false, "the NVIDIA driver sees no GPU"};
    if (e != cudaSuccess)
        return {false, std::string("the CUDA runtime cannot reach a GPU (") + cudaGetErrorName(e) + ")"};
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return {false, "cannot read the properties of device 0"};
    return {true, "CUDA device 0: " + std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                      std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs)"};
}

void run(Version v, const Problem& p, const Inputs& in, float* out) {
    validate(v, p, in.key_len);
    require_sm80(v);
    Problem_on_device dev(v, p, in);
    launch(v, p, dev);
    check(cudaDeviceSynchronize(), "kernel execution");
    dev.out.copy_to(out);
}

Timing time(Version v, const Problem& p, const Inputs& in, int warmup, int repeats) {
    validate(v, p, in.key_len);
    require_sm80(v);
    Problem_on_device dev(v, p, in);
    Timing timing = timed(warmup, repeats, [&] { launch(v, p, dev); });
    with_kernel(v, p, dev.bf16, [&](auto kernel) {
        cudaFuncAttributes attr{};
        check(cudaFuncGetAttributes(&attr, kernel), "cudaFuncGetAttributes");
        timing.shared_bytes = attr.sharedSizeBytes;
        timing.registers = attr.numRegs;
        timing.local_bytes = attr.localSizeBytes;
    });
    return timing;
}

namespace {

// The backward's buffers on the device: its inputs, what the forward saves, the gradients.
struct Backward_on_device {
    Backward_on_device(BackwardVersion version, const Problem& p, const BackwardInputs& in)
        : n(qkv_elements(p)),
          rows(n / static_cast<std::size_t>(p.d_head)),
          nn(version == BackwardVersion::naive ? scores_elements(p) : 0),
          q(in.q, n),
          k(in.k, n),
          v(in.v, n),
          d_out(in.d_out, n),
          key_len(in.key_len, static_cast<std::size_t>(p.batch)),
          out(n),
          lse(rows),
          delta(rows),
          probs(nn),
          d_scores(nn),
          dq(n),
          dk(n),
          dv(n),
          args(attention_args(p)) {}

    std::size_t n, rows, nn;
    Buffer<float> q, k, v, d_out;
    Buffer<int> key_len;
    Buffer<float> out, lse, delta;  // (B, H, N, d_head), (B, H, N), (B, H, N)
    Buffer<float> probs, d_scores;  // (B, H, N, N) each, naive only (empty otherwise)
    Buffer<float> dq, dk, dv;
    AttentionArgs args;
};

dim3 as_dim3(const std::array<unsigned, 3>& g) { return dim3(g[0], g[1], g[2]); }

// The forward the backward needs: version 3 with its log-sum-exp; naive also materialises P.
void launch_forward(BackwardVersion version, const Problem& p, Backward_on_device& dev) {
    const LaunchConfig cfg = launch_config(Version::tiled, p);
    with_d_head(p.d_head, [&](auto d) {
        attention_tiled_lse<decltype(d)::value><<<as_dim3(cfg.grid), dim3(cfg.block[0])>>>(
            dev.q.get(), dev.k.get(), dev.v.get(), dev.key_len.get(), dev.out.get(), dev.lse.get(), dev.args);
    });
    if (version == BackwardVersion::naive)
        attention_weights<<<as_dim3(row_grid(p, NaiveBackwardShape::threads)), NaiveBackwardShape::threads>>>(
            dev.q.get(), dev.k.get(), dev.key_len.get(), dev.lse.get(), dev.probs.get(), dev.args);
    check(cudaGetLastError(), "forward launch");
}

void launch_backward(BackwardVersion version, const Problem& p, Backward_on_device& dev) {
    if (version == BackwardVersion::naive) {
        const dim3 grid = as_dim3(row_grid(p, NaiveBackwardShape::threads));
        attention_backward_naive_rows<<<grid, NaiveBackwardShape::threads>>>(
            dev.k.get(), dev.v.get(), dev.key_len.get(), dev.probs.get(), dev.d_out.get(), dev.d_scores.get(),
            dev.dq.get(), dev.args);
        attention_backward_naive_columns<<<grid, NaiveBackwardShape::threads>>>(
            dev.q.get(), dev.key_len.get(), dev.probs.get(), dev.d_out.get(), dev.d_scores.get(), dev.dk.get(),
            dev.dv.get(), dev.args);
    } else {
        check(cudaMemsetAsync(dev.dq.get(), 0, dev.n * sizeof(float)), "cudaMemsetAsync");  // dQ is accumulated
        attention_backward_delta<<<as_dim3(row_grid(p, BackwardDeltaShape::threads)), BackwardDeltaShape::threads>>>(
            dev.out.get(), dev.d_out.get(), dev.delta.get(), dev.args);
        with_d_head(p.d_head, [&](auto d) {
            constexpr int D = decltype(d)::value, keys = FlashBackwardShape<D>::keys;
            attention_backward_flash<D><<<as_dim3(row_grid(p, keys)), keys>>>(
                dev.q.get(), dev.k.get(), dev.v.get(), dev.key_len.get(), dev.d_out.get(), dev.lse.get(),
                dev.delta.get(), dev.dq.get(), dev.dk.get(), dev.dv.get(), dev.args);
        });
    }
    check(cudaGetLastError(), "backward launch");
}

}  // namespace

void run_backward(BackwardVersion v, const Problem& p, const BackwardInputs& in, const Gradients& g) {
    validate(v, p, in.key_len);
    Backward_on_device dev(v, p, in);
    launch_forward(v, p, dev);
    launch_backward(v, p, dev);
    check(cudaDeviceSynchronize(), "kernel execution");
    dev.dq.copy_to(g.dq);
    dev.dk.copy_to(g.dk);
    dev.dv.copy_to(g.dv);
}

Timing time_backward(BackwardVersion v, const Problem& p, const BackwardInputs& in, int warmup, int repeats) {
    validate(v, p, in.key_len);
    Backward_on_device dev(v, p, in);
    launch_forward(v, p, dev);
    Timing timing = timed(warmup, repeats, [&] { launch_backward(v, p, dev); });
    cudaFuncAttributes attr{};
    if (v == BackwardVersion::naive) {
        check(cudaFuncGetAttributes(&attr, attention_backward_naive_rows), "cudaFuncGetAttributes");
    } else {
        with_d_head(p.d_head, [&](auto d) {
            check(cudaFuncGetAttributes(&attr, attention_backward_flash<decltype(d)::value>), "cudaFuncGetAttributes");
        });
    }
    timing.shared_bytes = attr.sharedSizeBytes;
    timing.registers = attr.numRegs;
    timing.local_bytes = attr.localSizeBytes;
    return timing;
}

}  // namespace headwise::kernels::device
