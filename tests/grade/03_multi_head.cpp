// Grader for exercise 03: multi-head attention with nn.MultiheadAttention's parameters.
//
// Oracles: a hand-worked two-head case, the library's MultiHeadAttention::forward
// (tests/attention_test.cpp), and PyTorch itself: the outputs nn.MultiheadAttention computed for
// the inputs in tests/fixtures/attend (scripts/make-fixtures). Tolerance: grade::Tolerance.
#include "03_multi_head.hpp"
#include "grade.hpp"

#include "headwise/attention.hpp"
#include "headwise/npy.hpp"
#include "headwise/random.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xtensor/xmath.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace headwise;
using grade::Ex03;

namespace {

MhaParameters parameters_of(const MultiHeadAttention& m) {
    return {m.heads, m.in_proj_weight, m.in_proj_bias, m.out_proj_weight, m.out_proj_bias};
}

// Checks the output and the per-head weights of one call against `expected_out`/`expected_w`.
void expect_mha(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                const Tensor3& expected_out, const Tensor4& expected_w, const std::string& label) {
    const std::string call = fmt::format("multi_head_attention(H = {}, d_model = {}{}, query {}, key {}){}", p.heads,
                                         p.out_proj_weight.shape()[0], p.in_proj_bias.size() ? ", biases" : "",
                                         grade::shape_of(query), grade::shape_of(key), label);
    // In the lesson's order: the per-head weights (projections, scores, softmax), then the output
    // (weights . v, merged heads, W_o). A wrong output with right weights is a mistake after softmax.
    const bool weights_ok = grade::expect<Ex03>(
        call + ", weights",
        [&](const Ex03& ex) {
            Tensor4 w;
            ex.multi_head_attention(p, query, key, value, w);
            return w;
        },
        expected_w, "B, H, N_q, N_k");
    grade::expect<Ex03>(
        call + ", output",
        [&](const Ex03& ex) {
            Tensor4 w;
            return ex.multi_head_attention(p, query, key, value, w);
        },
        expected_out, "B, N_q, d_model", {}, weights_ok ? "the per-head weights (projections, scores, softmax)" : "");
}

struct Config {
    std::size_t batch, n_q, n_k, d_model, heads;
    bool bias;
};

// Random parameters and inputs, checked against the library's forward pass.
void expect_like_library(const std::vector<Config>& configs, bool cross) {
    for (const Config& c : configs) {
        for (std::uint64_t seed : {1u, 2u}) {
            Random rng(seed);
            const MultiHeadAttention m = MultiHeadAttention::random(c.d_model, c.heads, c.bias, rng);
            const Tensor3 query = rng.normal<3>({c.batch, c.n_q, c.d_model});
            const Tensor3 key = cross ? rng.normal<3>({c.batch, c.n_k, c.d_model}) : query;
            const Tensor3 value = cross ? rng.normal<3>({c.batch, c.n_k, c.d_model}) : query;
            Tensor4 w;
            const Tensor3 out = m.forward(query, key, value, {}, &w);
            expect_mha(parameters_of(m), query, key, value, out, w, fmt::format(" with seed {}", seed));
        }
    }
}

}  // namespace

TEST_CASE("multi_head_attention: hand-worked two heads of width 1", "[ex03]") {
    // W_q = W_k = W_v = W_o = I (2 x 2), no biases, H = 2: head h sees only feature h, d_head = 1.
    // Tokens x_0 = (1, 0), x_1 = (0, 1). Head 0's scores are x_i0 * x_j0: [[1, 0], [0, 0]], so its
    // weights are [[e, 1] / (e + 1), [1/2, 1/2]]; head 1 is the mirror image.
    MhaParameters p;
    p.heads = 2;
    p.in_proj_weight = {{1, 0}, {0, 1}, {1, 0}, {0, 1}, {1, 0}, {0, 1}};  // (6, 2)
    p.out_proj_weight = {{1, 0}, {0, 1}};                                 // (2, 2)
    const Tensor3 x = {{{1, 0}, {0, 1}}};                                 // (1, 2, 2)
    const float e = static_cast<float>(std::exp(1.0)), a = e / (e + 1), b = 1 / (e + 1);
    const Tensor3 out = {{{a, 0.5f}, {0.5f, a}}};                                // (1, 2, 2)
    const Tensor4 weights = {{{{a, b}, {0.5f, 0.5f}}, {{0.5f, 0.5f}, {b, a}}}};  // (1, 2, 2, 2)
    expect_mha(p, x, x, x, out, weights, "");
}

TEST_CASE("multi_head_attention: self-attention matches the library (N = 1, H = 1, d_head = 1, d_model = 32 / H = 4)",
          "[ex03]") {
    expect_like_library({{2, 5, 5, 32, 4, true},
                         {1, 1, 1, 8, 1, false},
                         {2, 4, 4, 8, 8, true},
                         {3, 6, 6, 16, 2, false},
                         {2, 5, 5, 64, 8, true}},
                        false);
}

TEST_CASE("multi_head_attention: cross-attention with N_q != N_k and key != value", "[ex03]") {
    expect_like_library({{2, 3, 7, 32, 4, true}, {1, 5, 2, 16, 2, false}, {2, 1, 4, 12, 3, true}}, true);
}

TEST_CASE("multi_head_attention: matches torch.nn.MultiheadAttention on the PyTorch fixtures", "[ex03]") {
    const std::filesystem::path dir = std::filesystem::path(HEADWISE_FIXTURES_DIR) / "attend";
    std::ifstream in(dir / "manifest.json");
    REQUIRE(in);
    const auto manifest = nlohmann::json::parse(in);
    int used = 0;
    for (const auto& c : manifest.at("cases")) {
        if (c.at("causal").get<bool>() || c.at("key_padding").get<bool>()) continue;  // masks are exercise 04
        const std::filesystem::path at = dir / c.at("name").get<std::string>();
        const auto& inputs = c.at("inputs");
        auto tensor3 = [&](const std::string& name) {
            return npy::to_tensor<3>(npy::read(at / (name + ".npy")), name);
        };
        MhaParameters p;
        p.heads = c.at("heads").get<std::size_t>();
        p.in_proj_weight = npy::to_tensor<2>(npy::read(at / "in_proj_weight.npy"), "in_proj_weight");
        p.out_proj_weight = npy::to_tensor<2>(npy::read(at / "out_proj_weight.npy"), "out_proj_weight");
        if (inputs.contains("in_proj_bias")) {
            p.in_proj_bias = npy::to_tensor<1>(npy::read(at / "in_proj_bias.npy"), "in_proj_bias");
            p.out_proj_bias = npy::to_tensor<1>(npy::read(at / "out_proj_bias.npy"), "out_proj_bias");
        }
        const Tensor3 query = tensor3("query");
        const Tensor3 key = inputs.contains("key") ? tensor3("key") : query;
        const Tensor3 value = inputs.contains("value") ? tensor3("value") : query;
        const Tensor3 out = tensor3("output");
        const std::string label = fmt::format(" on fixture {}", c.at("name").get<std::string>());
        if (c.at("average_weights").get<bool>()) {
            // PyTorch averaged the weights over heads: compare the output, then the average.
            const Tensor3 averaged = tensor3("weights");  // (B, N_q, N_k)
            grade::expect<Ex03>(
                "multi_head_attention" + label + ", output",
                [&](const Ex03& ex) {
                    Tensor4 w;
                    return ex.multi_head_attention(p, query, key, value, w);
                },
                out, "B, N_q, d_model");
            grade::expect<Ex03>(
                "multi_head_attention" + label + ", weights averaged over heads",
                [&](const Ex03& ex) {
                    Tensor4 w;
                    ex.multi_head_attention(p, query, key, value, w);
                    return Tensor3(xt::mean(w, {1}));
                },
                averaged, "B, N_q, N_k");
        } else {
            expect_mha(p, query, key, value, out, npy::to_tensor<4>(npy::read(at / "weights.npy"), "weights"), label);
        }
        ++used;
    }
    CHECK(used >= 6);
}
