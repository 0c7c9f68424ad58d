// headwise benchmarks: the multi-head attention forward at the sizes docs/performance.md reports, next to
// the machine's own sgemm figure measured in the same process.
//
//   build/bench/headwise_bench --benchmark_filter=mha       (scripts/bench-compare runs this)
//   build/bench/headwise_bench --blas-kernels               which OpenBLAS kernels run, as JSON
//   build/bench/headwise_bench --memory B N d H [causal]    one forward: seconds and peak memory
//   build/bench/headwise_bench --kernels B N d H [causal|-] [rounds]   BLAS vs each micro-kernel
//
// HEADWISE_ISA=avx2 runs the attention on the AVX2 micro-kernels (and the AVX2 exponentials) on an
// AVX-512 machine, as an AVX2-only CPU would; OPENBLAS_CORETYPE=Haswell does the same for OpenBLAS,
// so that the same-run sgemm (BM_sgemm), the projections and the BLAS tiles are an AVX2 CPU's too.
// The kernel that runs is in the context ("attention_kernel") and in each BM_attention_only's label.
//
// Each forward is checked against the double-precision reference (on a slice) before it is
// timed. FLOPs are the dense count 2*B*N*d*4d + 4*B*N^2*d, also for causal, so causal
// GFLOP/s show the work skipped above the diagonal as speed.
#include "bench_common.hpp"
#include "headwise/reference/attention.hpp"
#include "headwise/fast/blas.hpp"
#include "headwise/fast/blas_coretype.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/isa.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/reference/layer_backward.hpp"
#include "headwise/reference/attention_backward.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

using namespace headwise;

namespace {

double mha_flops(double b, double n, double d) { return 2 * b * n * d * 4 * d + 4 * b * n * n * d; }

// The first four arguments of the attention benchmarks: (B, N, d_model, H).
std::array<std::size_t, 4> sizes(const benchmark::State& state) {
    return {static_cast<std::size_t>(state.range(0)), static_cast<std::size_t>(state.range(1)),
            static_cast<std::size_t>(state.range(2)), static_cast<std::size_t>(state.range(3))};
}

// Shows `flops` floating-point operations per iteration as GFLOP/s.
void count_gflops(benchmark::State& state, double flops) {
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The fast path must agree with the simple one before its speed means anything.
void check_against_reference(const MultiHeadAttention& mha, const Tensor3& x, bool causal) {
    AttentionOptions o;
    o.causal = causal;
    const Tensor3 first = xt::view(x, xt::range(0, 1));  // (1, N, d): one batch element is enough
    Tensor4 w;
    const double diff = max_abs_diff(mha.forward(first, o), mha.forward(first, o, &w));
    if (!(diff < 1e-4)) {
        fmt::print(stderr, "headwise_bench: fast path differs from the weights path by {:.3g}; not timing it\n", diff);
        std::exit(1);
    }
}

void BM_mha_forward(benchmark::State& state) {
    const auto [batch, n, d, heads] = sizes(state);
    const bool causal = state.range(4) != 0;
    Random rng(1);
    const auto mha = MultiHeadAttention::random(d, heads, true, rng);
    const Tensor3 x = rng.normal<3>({batch, n, d});  // (B, N, d_model)
    check_against_reference(mha, x, causal);
    AttentionOptions o;
    o.causal = causal;
    for (auto _ : state) {
        Tensor3 y = mha.forward(x, o);
        benchmark::DoNotOptimize(y.data());
    }
    count_gflops(state, mha_flops(double(batch), double(n), double(d)));
}

void BM_mha_forward_with_weights(benchmark::State& state) {
    const auto [batch, n, d, heads] = sizes(state);
    Random rng(1);
    const auto mha = MultiHeadAttention::random(d, heads, true, rng);
    const Tensor3 x = rng.normal<3>({batch, n, d});
    Tensor4 w;  // (B, H, N, N), materialised as PyTorch does with need_weights=True
    for (auto _ : state) {
        Tensor3 y = mha.forward(x, {}, &w);
        benchmark::DoNotOptimize(y.data());
    }
    count_gflops(state, mha_flops(double(batch), double(n), double(d)));
}

// The fused attention backward must agree with the double-precision reference before its layer
// is timed: one (1, 2, N, d_head) problem, P recomputed from the forward's log-sum-exp.
void check_backward_against_reference(std::size_t n, std::size_t d_head, bool causal) {
    Random rng(2);
    const Tensor4 q = rng.normal<4>({1, 2, n, d_head}), k = rng.normal<4>({1, 2, n, d_head});
    const Tensor4 v = rng.normal<4>({1, 2, n, d_head}), d_out = rng.normal<4>({1, 2, n, d_head});
    AttentionOptions o;
    o.causal = causal;
    const AttentionGrads fast = scaled_dot_product_attention_backward(q, k, v, d_out, o);
    const AttentionGrads ref = attention_backward_reference(q, k, v, d_out, o);
    const double diff =
        std::max({max_abs_diff(fast.dq, ref.dq), max_abs_diff(fast.dk, ref.dk), max_abs_diff(fast.dv, ref.dv)});
    if (!(diff < 1e-3)) {
        fmt::print(stderr, "headwise_bench: the fused backward differs from the reference by {:.3g}; not timing it\n",
                   diff);
        std::exit(1);
    }
}

// A training step's attention: the layer's forward keeping its tape, then the backward of every
// input and parameter from d_y (what `attend --grad-output` runs, without its file I/O). FLOPs:
// the dense count of the forward, times three (the backward's products are twice the forward's).
void BM_mha_backward(benchmark::State& state) {
    const auto [batch, n, d, heads] = sizes(state);
    const bool causal = state.range(4) != 0;
    check_backward_against_reference(std::min<std::size_t>(n, 512), d / heads, causal);
    Random rng(1);
    const auto m = GroupedQueryAttention::from_multi_head(MultiHeadAttention::random(d, heads, true, rng));
    const Tensor3 x = rng.normal<3>({batch, n, d});    // (B, N, d_model)
    const Tensor3 d_y = rng.normal<3>({batch, n, d});  // (B, N, d_model)
    AttentionOptions o;
    o.causal = causal;
    for (auto _ : state) {
        LayerTape tape;
        Tensor3 y = layer_forward(m, x, x, x, {}, o, tape);
        LayerGrads g = layer_backward(m, x, x, x, {}, o, std::move(tape), d_y);
        benchmark::DoNotOptimize(y.data());
        benchmark::DoNotOptimize(g.query.data());
    }
    count_gflops(state, 3.0 * mha_flops(double(batch), double(n), double(d)));
}

// The attention part alone (no projections): softmax(q k^T / sqrt(d_head)) v on (B, H, N, d_head),
// so a forward's time can be split into projections and attention; with the BLAS kernel
// (kernel:0) or the widest micro-kernels the CPU and HEADWISE_ISA allow (kernel:1; the label names
// them, BLAS where there are none).
void BM_attention_only(benchmark::State& state) {
    const auto [batch, n, d, heads] = sizes(state);
    Random rng(1);
    const Tensor4 q = rng.normal<4>({batch, heads, n, d / heads});  // (B, H, N, d_head)
    const Tensor4 k = rng.normal<4>({batch, heads, n, d / heads});
    const Tensor4 v = rng.normal<4>({batch, heads, n, d / heads});
    AttentionOptions o;
    o.causal = state.range(4) != 0;
    const fast::Kernel kernel = state.range(5) != 0 ? fast::Kernel::automatic : fast::Kernel::blas;
    state.SetLabel(std::string(fast::to_string(fast::resolve_kernel(kernel, d / heads))));
    fast::set_default_kernel(kernel);
    for (auto _ : state) {
        Tensor4 y = scaled_dot_product_attention(q, k, v, o);
        benchmark::DoNotOptimize(y.data());
    }
    fast::set_default_kernel(fast::Kernel::automatic);
    count_gflops(state, 4.0 * double(batch) * double(n) * double(n) * double(d));
}

// The projections alone, as the fast path runs them: x . [W_q; W_k; W_v]^T, then heads . W_o^T.
void BM_projections_only(benchmark::State& state) {
    const auto rows = static_cast<std::size_t>(state.range(0) * state.range(1));
    const auto d = static_cast<std::size_t>(state.range(2));
    Random rng(1);
    const auto mha = MultiHeadAttention::random(d, 1, true, rng);
    const Tensor2 x = rng.normal<2>({rows, d});
    std::vector<float> qkv(rows * 3 * d), out(rows * d);
    for (auto _ : state) {
        fast::linear_rows(x.data(), rows, d, mha.in_proj_weight.data(), 3 * d, mha.in_proj_bias.data(), qkv.data());
        fast::linear_rows(qkv.data(), rows, d, 3 * d, mha.out_proj_weight.data(), d, d, mha.out_proj_bias.data(), false,
                          out.data(), d);
        benchmark::DoNotOptimize(out.data());
    }
    count_gflops(state, 2.0 * double(rows) * double(d) * 4.0 * double(d));
}

void BM_sgemm(benchmark::State& state) {
    // The machine's yardstick: OpenBLAS on as many threads as headwise uses (headwise keeps it at
    // one, blas_coretype.cpp).
    const int before = blas::threads();
    blas::set_threads(static_cast<int>(fast::worker_count()));
    const auto n = static_cast<std::size_t>(state.range(0));
    std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
    for (auto _ : state) {
        blas::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
        benchmark::DoNotOptimize(c.data());
    }
    blas::set_threads(before);
    count_gflops(state, 2.0 * double(n) * double(n) * double(n));
}

}  // namespace

// (B, N, d_model, H, causal)
BENCHMARK(BM_mha_forward)
    ->Args({8, 512, 512, 8, 0})
    ->Args({8, 512, 512, 8, 1})
    ->Args({4, 1024, 768, 12, 0})
    ->Args({4, 1024, 768, 12, 1})
    ->Args({1, 4096, 512, 8, 0})  // a long sequence
    ->Args({1, 4096, 512, 8, 1})
    ->Args({2, 2048, 2048, 16, 0})  // d_head 128
    ->Args({2, 2048, 2048, 16, 1})
    ->Args({2, 128, 128, 4, 0})  // the --quick sizes of scripts/bench-compare
    ->Args({2, 128, 128, 4, 1})
    ->ArgNames({"B", "N", "d", "H", "causal"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_mha_backward)
    ->Args({8, 512, 512, 8, 0})
    ->Args({8, 512, 512, 8, 1})
    ->Args({4, 1024, 768, 12, 0})
    ->Args({4, 1024, 768, 12, 1})
    ->Args({1, 4096, 512, 8, 0})
    ->Args({1, 4096, 512, 8, 1})
    ->Args({2, 128, 128, 4, 0})
    ->Args({2, 128, 128, 4, 1})
    ->ArgNames({"B", "N", "d", "H", "causal"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_mha_forward_with_weights)
    ->Args({8, 512, 512, 8})
    ->ArgNames({"B", "N", "d", "H"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_attention_only)
    ->ArgsProduct({{8}, {512}, {512}, {8}, {0, 1}, {0, 1}})
    ->ArgsProduct({{4}, {1024}, {768}, {12}, {0, 1}, {0, 1}})
    ->ArgsProduct({{1}, {4096}, {512}, {8}, {0, 1}, {0, 1}})
    ->ArgsProduct({{2}, {2048}, {2048}, {16}, {0, 1}, {0, 1}})
    ->ArgNames({"B", "N", "d", "H", "causal", "kernel"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_projections_only)
    ->Args({8, 512, 512})
    ->Args({4, 1024, 768})
    ->Args({1, 4096, 512})
    ->ArgNames({"B", "N", "d"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_sgemm)->Arg(2048)->ArgName("n")->Unit(benchmark::kMillisecond)->UseRealTime();

namespace {

// A line of /proc/self/status ("VmRSS", "VmHWM" = peak RSS), in bytes.
double status_bytes(const std::string& field) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(field + ":", 0) == 0) return std::strtod(line.c_str() + field.size() + 1, nullptr) * 1024.0;
    return 0.0;
}

// One forward without weights at the given size: seconds (wall and CPU), and the peak memory it
// added beyond its input, parameters and output (peak RSS during the call, less RSS before, less
// the output); then a second, warm call's seconds.
int memory_run(char** argv, int argc) {
    const auto arg = [&](int i) { return static_cast<std::size_t>(std::strtoull(argv[i], nullptr, 10)); };
    const std::size_t batch = arg(2), n = arg(3), d = arg(4), heads = arg(5);
    const bool causal = argc > 6 && std::strcmp(argv[6], "causal") == 0;
    Random rng(1);
    const auto mha = MultiHeadAttention::random(d, heads, true, rng);
    const Tensor3 x = rng.normal<3>({batch, n, d});  // (B, N, d_model)
    (void)mha.forward(rng.normal<3>({1, 4, d}));     // libraries and threads started
    AttentionOptions o;
    o.causal = causal;
    const double before = status_bytes("VmRSS");
    std::ofstream("/proc/self/clear_refs") << "5";  // the peak (VmHWM) starts again from here
    const double c0 = bench::cpu_now();
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor3 y = mha.forward(x, o);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = bench::cpu_now() - c0;
    const double peak = status_bytes("VmHWM");
    const double output = double(y.size()) * sizeof(float);
    // A second call: the workspace, the packed keys and the threads' stacks are there already.
    const double c1 = bench::cpu_now();
    const auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(mha.forward(x, o).data());
    const double warm_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    const double warm_cpu = bench::cpu_now() - c1;
    fmt::print(
        "{{\"B\": {}, \"N\": {}, \"d\": {}, \"H\": {}, \"causal\": {}, \"seconds\": {:.3f}, \"cpu_seconds\": {:.3f}, "
        "\"warm_seconds\": {:.3f}, \"warm_cpu_seconds\": {:.3f}, "
        "\"extra_peak_mib\": {:.1f}, \"planned_scratch_mib\": {:.1f}, \"input_mib\": {:.1f}}}\n",
        batch, n, d, heads, causal, seconds, cpu, warm_seconds, warm_cpu, (peak - before - output) / (1 << 20),
        double(mha.forward_scratch_bytes(batch, n, n, false)) / (1 << 20),
        double(x.size()) * sizeof(float) / (1 << 20));
    return 0;
}

// The attention part with each kernel this process may run (BLAS, then the micro-kernels of each
// instruction set the CPU and HEADWISE_ISA allow for this d_head), calls alternating (BLAS, AVX2,
// AVX-512, BLAS, ...): median wall time and median process CPU time (both threads) per call. CPU
// time is what a busy, shared machine distorts least.
int kernels_run(char** argv, int argc) {
    const auto arg = [&](int i) { return static_cast<std::size_t>(std::strtoull(argv[i], nullptr, 10)); };
    const std::size_t batch = arg(2), n = arg(3), d = arg(4), heads = arg(5);
    const bool causal = argc > 6 && std::strcmp(argv[6], "causal") == 0;
    const std::size_t rounds = argc > 7 ? arg(7) : 9;
    Random rng(1);
    const Tensor4 q = rng.normal<4>({batch, heads, n, d / heads});  // (B, H, N, d_head)
    const Tensor4 k = rng.normal<4>({batch, heads, n, d / heads});
    const Tensor4 v = rng.normal<4>({batch, heads, n, d / heads});
    AttentionOptions o;
    o.causal = causal;
    std::vector<fast::Kernel> kernels{fast::Kernel::blas};
    for (fast::Kernel kernel : {fast::Kernel::micro_kernel_avx2, fast::Kernel::micro_kernel_avx512})
        if (fast::resolve_kernel(kernel, d / heads) == kernel) kernels.push_back(kernel);
    std::vector<std::vector<double>> wall(kernels.size()), cpu(kernels.size());
    for (std::size_t r = 0; r <= rounds; ++r)
        for (std::size_t i = 0; i < kernels.size(); ++i) {
            fast::set_default_kernel(kernels[i]);
            const double c0 = bench::cpu_now();
            const auto t0 = std::chrono::steady_clock::now();
            Tensor4 y = scaled_dot_product_attention(q, k, v, o);
            benchmark::DoNotOptimize(y.data());
            if (r == 0) continue;  // warm-up
            wall[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            cpu[i].push_back(bench::cpu_now() - c0);
        }
    fast::set_default_kernel(fast::Kernel::automatic);
    const double gflop = 4.0 * double(batch) * double(n) * double(n) * double(d) * 1e-9;
    for (std::size_t i = 0; i < kernels.size(); ++i)
        fmt::print(
            "({}, {}, {}, {}) causal={} {:<21} wall {:8.2f} ms  cpu {:8.2f} ms  {:6.1f} GFLOP/s per cpu-second x 2\n",
            batch, n, d, heads, causal, fast::to_string(kernels[i]), 1e3 * bench::median(wall[i]),
            1e3 * bench::median(cpu[i]), 2 * gflop / bench::median(cpu[i]));
    for (std::size_t i = 1; i < kernels.size(); ++i)
        fmt::print("{} / BLAS: wall {:.2f}x, cpu {:.2f}x faster\n", fast::to_string(kernels[i]),
                   bench::median(wall[0]) / bench::median(wall[i]), bench::median(cpu[0]) / bench::median(cpu[i]));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t threads = bench::worker_count_or_exit("headwise_bench");
    Isa isa = Isa::scalar;
    try {  // a bad HEADWISE_ISA: one line, exit 2, before anything runs
        isa = fast::fast_isa();
    } catch (const usage_error& e) {
        fmt::print(stderr, "headwise_bench: {}\n", e.what());
        return 2;
    }
    // The attention's kernel at the reported sizes (d_head 64), as the CPU and HEADWISE_ISA allow.
    const std::string attention_kernel =
        fmt::format("{} (instruction set {}{})", fast::to_string(fast::choose_kernel(64)), to_string(isa),
                    std::getenv("HEADWISE_ISA") ? ", HEADWISE_ISA" : "");
    if (argc >= 2 && std::strcmp(argv[1], "--blas-kernels") == 0) {
        const blas::KernelReport k = blas::kernel_report();
        const char* env = std::getenv("OPENBLAS_CORETYPE");
        const nlohmann::ordered_json report = {{"corename", k.corename},
                                               {"source", k.source},
                                               {"config", k.config},
                                               {"warning", k.warning},
                                               {"OPENBLAS_CORETYPE", env != nullptr ? env : ""},
                                               {"threads", threads},
                                               {"isa", to_string(isa)},
                                               {"attention_kernel", attention_kernel}};
        fmt::print("{}\n", report.dump());
        return 0;
    }
    if (argc >= 6 && std::strcmp(argv[1], "--memory") == 0) return memory_run(argv, argc);
    if (argc >= 6 && std::strcmp(argv[1], "--kernels") == 0) return kernels_run(argv, argc);
    const blas::KernelReport k = blas::kernel_report();
    benchmark::AddCustomContext("blas_kernels", k.corename + " (" + k.source + ")");
    benchmark::AddCustomContext("headwise_threads", std::to_string(threads));
    benchmark::AddCustomContext("attention_kernel", attention_kernel);
    if (!k.warning.empty()) fmt::print(stderr, "headwise_bench: warning: {}\n", k.warning);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
