// headwise decode benchmark: tokens per second when a decoder generates 512 tokens one
// at a time, with the KV cache (project the new token, append, attend one row) and without it
// (the whole causal forward over every token so far, again for each new token).
//
//   build/bench/headwise_decode_bench      (d_model 512, H 8, H_kv in {8, 2, 1}, B = 1)
//
// Each configuration is checked before it is timed: the cached outputs of a short run must equal
// the recomputed ones. items_per_second in the output is generated tokens per second.
#include "headwise/inference/kv_cache.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <cstdlib>

using namespace headwise;

namespace {

constexpr std::size_t d_model = 512, heads = 8, generated = 512;

Tensor3 token(const Tensor3& x, std::size_t t) { return xt::view(x, xt::all(), xt::range(t, t + 1), xt::all()); }

// Generates x.shape()[1] tokens from an empty cache; returns the last token's output.
Tensor3 with_cache(const GroupedQueryAttention& m, const Tensor3& x) {
    KVCache cache(x.shape()[0], m.kv_heads, m.d_head(), x.shape()[1]);
    Tensor3 y;
    for (std::size_t t = 0; t < x.shape()[1]; ++t) y = decode_step(m, cache, token(x, t));  // (B, 1, d_model)
    return y;
}

Tensor3 without_cache(const GroupedQueryAttention& m, const Tensor3& x) {
    AttentionOptions causal;
    causal.causal = true;
    Tensor3 y;
    for (std::size_t t = 0; t < x.shape()[1]; ++t) {
        const Tensor3 prefix = xt::view(x, xt::all(), xt::range(0, t + 1), xt::all());  // (B, t + 1, d_model)
        y = token(m.forward(prefix, causal), t);                                        // only the last is new
    }
    return y;
}

void check(const GroupedQueryAttention& m, const Tensor3& x) {
    const Tensor3 first = xt::view(x, xt::all(), xt::range(0, 24), xt::all());
    const double diff = max_abs_diff(with_cache(m, first), without_cache(m, first));
    if (!(diff < 1e-4)) {
        fmt::print(stderr, "headwise_decode_bench: cached and recomputed decoding differ by {:.3g}; not timing\n",
                   diff);
        std::exit(1);
    }
}

void BM_decode(benchmark::State& state) {
    const auto kv_heads = static_cast<std::size_t>(state.range(0));
    const bool cached = state.range(1) != 0;
    Random rng(1);
    const GroupedQueryAttention m = GroupedQueryAttention::random(d_model, heads, kv_heads, true, rng);
    const Tensor3 x = rng.normal<3>({1, generated, d_model});  // (B, N, d_model)
    check(m, x);
    for (auto _ : state) {
        Tensor3 y = cached ? with_cache(m, x) : without_cache(m, x);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * generated));
    state.SetLabel(fmt::format("H_kv={} {}", kv_heads, cached ? "cache" : "recompute"));
}

}  // namespace

// Args: H_kv, cached. Wall-clock time (the library's threads do the work, not only this one);
// the recompute runs take seconds each, so one iteration per repetition.
BENCHMARK(BM_decode)->ArgsProduct({{8, 2, 1}, {1}})->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();
BENCHMARK(BM_decode)->ArgsProduct({{8, 2, 1}, {0}})->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

BENCHMARK_MAIN();
