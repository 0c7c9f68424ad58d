// Lesson 07's model, timed: loading all-MiniLM-L6-v2 (mmap + copying the 101 tensors out) and one
// 15-token sentence end to end (tokenize, embed, 6 layers, pool), the embedding checked against
// transformers' (tests/fixtures/bert/tired) before anything is timed.
//
//   OPENBLAS_NUM_THREADS=1 taskset -c 0 build/bench/bert_bench     one core, as in the issue
//
// "CPU" is the whole process's CPU time (every thread), "Time" the wall clock: on a shared machine
// the wall clock includes waiting for the core, so note the load average beside any figure.
//
// Needs the cached model (scripts/fetch-model); without it every benchmark reports an error.
#include "headwise/model/bert.hpp"
#include "headwise/io/npy.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdlib>

using namespace headwise;

namespace {

const std::string sentence = "The dog could not jump the fence because it was too tired.";  // 15 tokens

const bert::Model* model_or_null() {
    static const bert::Model* model = []() -> const bert::Model* {
        try {
            return new bert::Model(bert::Model::load(bert::model_dir()));
        } catch (const std::exception& e) {
            fmt::print(stderr, "bert_bench: {}\n", e.what());
            return nullptr;
        }
    }();
    return model;
}

// The embedding must match transformers' before its speed means anything.
bool checked(const bert::Model& m) {
    const Tensor2 e = bert::forward(m, bert::tokenize(m, {sentence})).embedding;
    const Tensor2 expected =
        npy::to_tensor<2>(npy::read(HEADWISE_FIXTURES_DIR "/bert/tired/embedding.npy"), "embedding");
    const double cos = bert::cosine(e.data(), expected.data(), e.size());
    if (!(cos > 0.99999)) fmt::print(stderr, "bert_bench: cosine with transformers {:.6f}; not timing\n", cos);
    return cos > 0.99999;
}

void BM_bert_load(benchmark::State& state) {
    const auto dir = bert::model_dir();
    if (model_or_null() == nullptr) {
        state.SkipWithError("the model is not cached (scripts/fetch-model)");
        return;
    }
    for (auto _ : state) {
        const bert::Model m = bert::Model::load(dir);
        benchmark::DoNotOptimize(m.layers.data());
    }
}

void BM_bert_sentence15(benchmark::State& state) {
    const bert::Model* m = model_or_null();
    if (m == nullptr || !checked(*m)) {
        state.SkipWithError("no model, or it disagrees with transformers");
        return;
    }
    for (auto _ : state) {
        const Tensor2 e = bert::forward(*m, bert::tokenize(*m, {sentence})).embedding;  // (1, 384)
        benchmark::DoNotOptimize(e.data());
    }
    state.counters["tokens"] = 15;
}

void BM_bert_sentence15_with_attention(benchmark::State& state) {
    const bert::Model* m = model_or_null();
    if (m == nullptr) {
        state.SkipWithError("the model is not cached (scripts/fetch-model)");
        return;
    }
    bert::ForwardOptions keep;
    keep.keep_attention = true;
    for (auto _ : state) {
        const bert::Outputs o = bert::forward(*m, bert::tokenize(*m, {sentence}), keep);
        benchmark::DoNotOptimize(o.embedding.data());
    }
}

}  // namespace

BENCHMARK(BM_bert_load)->Unit(benchmark::kMillisecond)->MinTime(2.0)->MeasureProcessCPUTime();
BENCHMARK(BM_bert_sentence15)->Unit(benchmark::kMillisecond)->MinTime(2.0)->MeasureProcessCPUTime();
BENCHMARK(BM_bert_sentence15_with_attention)->Unit(benchmark::kMillisecond)->MinTime(2.0)->MeasureProcessCPUTime();
BENCHMARK_MAIN();
