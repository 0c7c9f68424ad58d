// Lesson 12's decoder against an independent implementation: every position's logits of committed
// prompts from a PyTorch forward written apart from this code (scripts/smollm2_reference.py: the
// `gguf` package's dequantization, float64), its greedy continuations, and the fast path against
// the exact one. Needs the cached SmolLM2-135M-Instruct (scripts/fetch-model): skipped (77) without.
#include "headwise/io/npy.hpp"
#include "headwise/model/llama.hpp"
#include "headwise/model/quant_dot.hpp"
#include "decoder_fixtures.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace headwise;
namespace fs = std::filesystem;

namespace {

const fs::path fixtures = testing::decoder_fixtures;

const llama::Model& model_or_skip() {
    static const llama::Model model = llama::Model::open(testing::decoder_path_or_skip());
    return model;
}

nlohmann::json reference() {
    std::ifstream in(fixtures / "reference_prompts.json");
    return nlohmann::json::parse(in);
}

std::vector<std::int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<std::int32_t>>(); }

template <class T>
double max_abs_diff(const float* a, const T* b, std::size_t n) {
    double m = 0.0;
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
    return m;
}

std::vector<std::int32_t> greedy(llama::Session& session, const std::vector<std::int32_t>& prompt, std::size_t count) {
    const std::size_t V = session.model().config().vocab;
    std::vector<float> logits(V);
    session.forward(prompt, logits.data());
    llama::Sampler sampler(llama::Sampling{});
    std::vector<std::int32_t> out;
    for (std::size_t t = 0; t < count; ++t) {
        out.push_back(sampler.next(logits));
        if (t + 1 < count) session.forward(std::span(&out.back(), 1), logits.data());
    }
    return out;
}

std::string text_long() {
    std::ifstream in(fixtures / "text_long.txt");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("exact path: every position's logits match the independent PyTorch forward to 1e-3", "[llama]") {
    const llama::Model& model = model_or_skip();
    const std::size_t V = model.config().vocab;
    for (const auto& p : reference()["prompts"]) {
        const std::vector<std::int32_t> ids = ids_of(p["ids"]);
        const npy::Array expected = npy::read(fixtures / p["logits"].get<std::string>());
        REQUIRE(expected.shape == std::vector<std::size_t>{ids.size(), V});
        llama::Session session(model, llama::Path::exact, ids.size());
        std::vector<float> logits(ids.size() * V);
        session.forward(ids, logits.data(), true);
        INFO("prompt " << p["name"].get<std::string>());
        CHECK(max_abs_diff(logits.data(), expected.values.data(), logits.size()) <= 1e-3);
    }
}

TEST_CASE("exact path: greedy continuations of 32 tokens are the reference's, token for token", "[llama]") {
    const llama::Model& model = model_or_skip();
    for (const auto& p : reference()["prompts"]) {
        const std::vector<std::int32_t> ids = ids_of(p["ids"]);
        llama::Session session(model, llama::Path::exact, ids.size() + 32);
        INFO("prompt " << p["name"].get<std::string>());
        CHECK(greedy(session, ids, 32) == ids_of(p["greedy_ids"]));
    }
}

TEST_CASE("the tokenizer gives the reference's ids for the committed prompts", "[llama]") {
    const llama::Model& model = model_or_skip();
    for (const auto& p : reference()["prompts"]) {
        INFO("prompt " << p["name"].get<std::string>());
        CHECK(model.tokenizer().encode(p["text"].get<std::string>()) == ids_of(p["ids"]));
    }
}

TEST_CASE("fast path: a long prompt's logits through dequantized matrices and BLAS equal the exact path's", "[llama]") {
    const llama::Model& model = model_or_skip();
    const std::size_t V = model.config().vocab;
    std::vector<std::int32_t> ids = model.tokenizer().encode(text_long());
    ids.resize(48);  // more than 32 tokens: the float products, not the integer ones
    std::vector<float> exact(ids.size() * V), fast(ids.size() * V);
    llama::Session(model, llama::Path::exact, ids.size()).forward(ids, exact.data(), true);
    llama::Session(model, llama::Path::fast, ids.size()).forward(ids, fast.data(), true);
    CHECK(max_abs_diff(exact.data(), fast.data(), exact.size()) <= 1e-3);
}

TEST_CASE("fast path: a short prompt through the integer products stays close to the exact path", "[llama]") {
    const llama::Model& model = model_or_skip();
    const std::size_t V = model.config().vocab;
    const auto p = reference()["prompts"][0];
    const std::vector<std::int32_t> ids = ids_of(p["ids"]);
    std::vector<float> exact(ids.size() * V), fast(ids.size() * V);
    llama::Session(model, llama::Path::exact, ids.size()).forward(ids, exact.data(), true);
    llama::Session(model, llama::Path::fast, ids.size()).forward(ids, fast.data(), true);
    // quantized activations move logits of size ~10-20 by ~0.25 on average (at most ~1 here); the argmax stays
    double total = 0.0;
    for (std::size_t i = 0; i < exact.size(); ++i) total += std::fabs(double(exact[i]) - fast[i]);
    CHECK(total / double(exact.size()) <= 0.5);
    CHECK(max_abs_diff(exact.data(), fast.data(), exact.size()) <= 3.0);
    for (std::size_t i = 0; i < ids.size(); ++i)
        CHECK(std::max_element(exact.begin() + i * V, exact.begin() + (i + 1) * V) - exact.begin() ==
              std::max_element(fast.begin() + i * V, fast.begin() + (i + 1) * V) - fast.begin());
}

TEST_CASE("fast path: decoding a long text token by token keeps its mean log-likelihood within 0.5%", "[llama]") {
    const llama::Model& model = model_or_skip();
    const std::size_t V = model.config().vocab;
    const std::vector<std::int32_t> ids = model.tokenizer().encode(text_long());
    REQUIRE(ids.size() >= 512);
    REQUIRE(ids.size() == reference()["text_long"]["n_tokens"].get<std::size_t>());
    // exact: the whole text in one forward (in steps of 512 tokens, the second masked from position 512)
    std::vector<float> logits(ids.size() * V);
    llama::Session(model, llama::Path::exact, ids.size()).forward(ids, logits.data(), true);
    const double exact = llama::mean_log_likelihood(logits, ids, V);
    CHECK(exact == Approx(reference()["text_long"]["mean_log_likelihood"].get<double>()).epsilon(1e-4));
    // fast: one token at a time, every product on the quantized blocks
    llama::Session session(model, llama::Path::fast, ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) session.forward(std::span(&ids[i], 1), logits.data() + i * V);
    const double fast = llama::mean_log_likelihood(logits, ids, V);
    INFO("exact " << exact << ", fast (integer products, " << quant::to_string(quant::active_isa()) << ") " << fast);
    CHECK(std::fabs(fast - exact) <= 0.005 * std::fabs(exact));
}

TEST_CASE("the cache: decoding one token at a time equals recomputing every token", "[llama]") {
    const llama::Model& model = model_or_skip();
    const std::size_t V = model.config().vocab;
    const std::vector<std::int32_t> prompt = model.tokenizer().encode("Attention is all you need");
    llama::Session cached(model, llama::Path::exact, prompt.size() + 6);
    const std::vector<std::int32_t> out = greedy(cached, prompt, 6);
    std::vector<float> last(V);
    cached.forward(std::span(&out.back(), 1), last.data());
    std::vector<std::int32_t> all = prompt;
    all.insert(all.end(), out.begin(), out.end());
    std::vector<float> recomputed(V);
    llama::Session(model, llama::Path::exact, all.size()).forward(all, recomputed.data());
    CHECK(max_abs_diff(last.data(), recomputed.data(), V) <= 1e-4);
    CHECK(cached.cache(0).length() == all.size());
}

TEST_CASE("a forward past the capacity or with an id outside the vocabulary is refused in one line", "[llama]") {
    const llama::Model& model = model_or_skip();
    llama::Session session(model, llama::Path::fast, 4);
    std::vector<float> logits(model.config().vocab);
    const std::vector<std::int32_t> five = {1, 2, 3, 4, 5};
    CHECK_THROWS_WITH(session.forward(five, logits.data()), Catch::Contains("do not fit in a sequence of 4"));
    const std::vector<std::int32_t> bad = {49152};
    CHECK_THROWS_WITH(session.forward(bad, logits.data()), Catch::Contains("outside the vocabulary"));
    CHECK(session.length() == 0);
}

TEST_CASE("sampling: temperature 0 is the argmax; a seed gives the same draws; top-p outside (0, 1] is refused",
          "[llama]") {
    const std::vector<float> logits = {0.1f, 2.0f, 1.9f, -1.0f};
    CHECK(llama::Sampler(llama::Sampling{}).next(logits) == 1);
    llama::Sampler a({1.0f, 0, 1.0f, 7}), b({1.0f, 0, 1.0f, 7});
    std::vector<std::int32_t> da, db;
    for (int i = 0; i < 50; ++i) da.push_back(a.next(logits)), db.push_back(b.next(logits));
    CHECK(da == db);
    CHECK(std::count(da.begin(), da.end(), 1) > 10);  // both likely tokens are drawn
    CHECK(std::count(da.begin(), da.end(), 2) > 10);
    llama::Sampler top1({1.0f, 1, 1.0f, 3});  // top-k 1 is greedy whatever the temperature
    for (int i = 0; i < 20; ++i) CHECK(top1.next(logits) == 1);
    llama::Sampler nucleus({1.0f, 0, 0.3f, 3});  // p(1) ~ 0.47 > 0.3 alone
    for (int i = 0; i < 20; ++i) CHECK(nucleus.next(logits) == 1);
    CHECK_THROWS_WITH(llama::validate({1.0f, 0, 0.0f, 0}), Catch::Contains("--top-p"));
    CHECK_THROWS_WITH(llama::validate({1.0f, 0, 1.5f, 0}), Catch::Contains("--top-p"));
    CHECK_THROWS_WITH(llama::validate({-1.0f, 0, 1.0f, 0}), Catch::Contains("--temperature"));
}
