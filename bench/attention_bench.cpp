// headwise benchmarks: the multi-head attention forward at the sizes of issue 8, next to the
// machine's own sgemm figure measured in the same process.
//
//   build/bench/headwise_bench --benchmark_filter=mha       (scripts/bench-compare runs this)
//
// Each forward is checked against the double-precision reference (on a slice) before it is
// timed. FLOPs are the dense count 2*B*N*d*4d + 4*B*N^2*d, also for causal, so causal
// GFLOP/s show the work skipped above the diagonal as speed.
#include "headwise/attention.hpp"
#include "headwise/blas.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <cstdlib>
#include <vector>

using namespace headwise;

namespace {

double mha_flops(double b, double n, double d) { return 2 * b * n * d * 4 * d + 4 * b * n * n * d; }

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
    const auto batch = static_cast<std::size_t>(state.range(0));
    const auto n = static_cast<std::size_t>(state.range(1));
    const auto d = static_cast<std::size_t>(state.range(2));
    const auto heads = static_cast<std::size_t>(state.range(3));
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
    state.counters["GFLOP/s"] = benchmark::Counter(mha_flops(double(batch), double(n), double(d)) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

void BM_mha_forward_with_weights(benchmark::State& state) {
    const auto batch = static_cast<std::size_t>(state.range(0));
    const auto n = static_cast<std::size_t>(state.range(1));
    const auto d = static_cast<std::size_t>(state.range(2));
    const auto heads = static_cast<std::size_t>(state.range(3));
    Random rng(1);
    const auto mha = MultiHeadAttention::random(d, heads, true, rng);
    const Tensor3 x = rng.normal<3>({batch, n, d});
    Tensor4 w;  // (B, H, N, N), materialised as PyTorch does with need_weights=True
    for (auto _ : state) {
        Tensor3 y = mha.forward(x, {}, &w);
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(mha_flops(double(batch), double(n), double(d)) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

void BM_sgemm(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
    for (auto _ : state) {
        blas::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
        benchmark::DoNotOptimize(c.data());
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * double(n) * double(n) * double(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

// (B, N, d_model, H, causal)
BENCHMARK(BM_mha_forward)
    ->Args({8, 512, 512, 8, 0})
    ->Args({8, 512, 512, 8, 1})
    ->Args({4, 1024, 768, 12, 0})
    ->Args({4, 1024, 768, 12, 1})
    ->Args({2, 128, 128, 4, 0})  // the --quick sizes of scripts/bench-compare
    ->Args({2, 128, 128, 4, 1})
    ->ArgNames({"B", "N", "d", "H", "causal"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_mha_forward_with_weights)
    ->Args({8, 512, 512, 8})
    ->ArgNames({"B", "N", "d", "H"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_sgemm)->Arg(2048)->ArgName("n")->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
