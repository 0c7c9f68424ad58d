// Grader for exercise 03: multi-head attention with nn.MultiheadAttention's parameters.
//
// Oracles: a hand-worked two-head case, the library's MultiHeadAttention::forward
// (tests/attention_test.cpp), and PyTorch itself: the outputs nn.MultiheadAttention computed for
// the inputs in tests/fixtures/attend (scripts/make-fixtures). Tolerance: grade::Tolerance.
#include "03_multi_head.hpp"
#include "grade.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/io/npy.hpp"
#include "headwise/base/random.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace headwise;
using grade::Ex03;

namespace {

MhaParameters parameters_of(const MultiHeadAttention& m) {
    return {m.heads, m.in_proj_weight, m.in_proj_bias, m.out_proj_weight, m.out_proj_bias};
}

// The library's forward pass (tests/attention_test.cpp checks it against PyTorch) on `p`: the
// oracle of the projection probes below. Returns the output and fills `weights`.
Tensor3 library_forward(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                        Tensor4& weights) {
    MultiHeadAttention m;
    m.heads = p.heads;
    m.in_proj_weight = p.in_proj_weight, m.in_proj_bias = p.in_proj_bias;
    m.out_proj_weight = p.out_proj_weight, m.out_proj_bias = p.out_proj_bias;
    return m.forward(query, key, value, {}, &weights);
}

// `p` with projection `block` (0 = W_q, 1 = W_k, 2 = W_v) replaced by `w` and its bias by 0.
MhaParameters with_block(MhaParameters p, std::size_t block, const Tensor2& w) {
    const std::size_t d = p.out_proj_weight.shape()[0];
    xt::view(p.in_proj_weight, xt::range(block * d, (block + 1) * d), xt::all()) = w;
    if (p.in_proj_bias.size() != 0) xt::view(p.in_proj_bias, xt::range(block * d, (block + 1) * d)) = 0.0f;
    return p;
}

// `p` with its projection blocks taken from other blocks: block i (0 = W_q, 1 = W_k, 2 = W_v) of
// the result is block from[i] of `p`, rows and bias.
MhaParameters with_blocks(const MhaParameters& p, const std::array<std::size_t, 3>& from) {
    const std::size_t d = p.out_proj_weight.shape()[0];
    MhaParameters r = p;
    for (std::size_t i = 0; i < 3; ++i) {
        xt::view(r.in_proj_weight, xt::range(i * d, (i + 1) * d), xt::all()) =
            xt::view(p.in_proj_weight, xt::range(from[i] * d, (from[i] + 1) * d), xt::all());
        if (p.in_proj_bias.size() != 0)
            xt::view(r.in_proj_bias, xt::range(i * d, (i + 1) * d)) =
                xt::view(p.in_proj_bias, xt::range(from[i] * d, (from[i] + 1) * d));
    }
    return r;
}

// Which blocks of in_proj_weight the subject's wrong tensor was projected with: it is compared
// with what every other choice of blocks gives (q and k for the weights, q, k and v for the
// output). The choices that give it are named when they are all the combinations of a few
// blocks per projection (on a probe, W_q's and W_k's blocks are both 0 and give the same): then
// "v from W_q's or W_k's block" is true of each. Projections that may keep their own block are
// not mentioned; nothing is said when no choice gives the tensor.
template <class Result>
std::string block_reading(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                          const Result& actual, std::string_view dims) {
    static const char* const names[] = {"W_q's", "W_k's", "W_v's"};
    constexpr bool weights = std::is_same_v<Result, Tensor4>;
    std::array<std::array<bool, 3>, 3> from{};  // from[projection][block]: some fitting choice takes it
    std::size_t fits = 0;
    for (std::size_t bq = 0; bq < 3; ++bq)
        for (std::size_t bk = 0; bk < 3; ++bk)
            for (std::size_t bv = weights ? 2 : 0; bv < 3; ++bv) {
                if (bq == 0 && bk == 1 && bv == 2) continue;  // the right blocks
                Tensor4 w;
                const Tensor3 out = library_forward(with_blocks(p, {bq, bk, bv}), query, key, value, w);
                bool same = false;
                if constexpr (weights)
                    same = grade::agree(actual, w, dims, {});
                else
                    same = grade::agree(actual, out, dims, {});
                if (!same) continue;
                ++fits;
                from[0][bq] = from[1][bk] = from[2][bv] = true;
            }
    if (fits == 0) return {};
    // The fitting choices must be every combination of the blocks seen per projection.
    std::size_t product = 1;
    for (const auto& blocks : from) product *= std::size_t(std::ranges::count(blocks, true));
    if (product != fits + (from[0][0] && from[1][1] && from[2][2] ? 1 : 0)) return {};
    std::vector<std::string> wrong;
    for (std::size_t i = 0; i < 3; ++i) {
        if (from[i][i]) continue;  // its own block gives it too: nothing certain about this one
        std::string blocks;
        for (std::size_t b = 0; b < 3; ++b)
            if (from[i][b]) blocks += (blocks.empty() ? "" : " or ") + std::string(names[b]);
        wrong.push_back(fmt::format("{} from {} block", "qkv"[i], blocks));
    }
    if (wrong.empty()) return {};
    std::string list;
    for (std::size_t i = 0; i < wrong.size(); ++i)
        list += (i == 0 ? "" : i + 1 == wrong.size() ? " and " : ", ") + wrong[i];
    return fmt::format(
        "it equals the {} with {} (compared with every choice of blocks of in_proj_weight and its bias: W_q is rows 0 "
        ".. d_model-1, W_k the next d_model rows, W_v the last)",
        weights ? "weights" : "output", list);
}

// Whether every row (B, N_q) of actual - expected is `sign` times `v` (d_model values).
bool rows_off_by(const Tensor3& actual, const Tensor3& expected, const Tensor1& v, float sign) {
    const std::size_t d = expected.shape()[2];
    const float biggest = xt::amax(xt::abs(v))();
    if (v.size() != d || !(biggest > 1e-3f)) return false;  // said only of a vector clearly away from zero
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const float delta = actual.flat(i) - expected.flat(i);
        if (!(std::abs(delta - sign * v(i % d)) <= 1e-4f + 1e-3f * (std::abs(expected.flat(i)) + biggest)))
            return false;
    }
    return true;
}

// The output's difference from the expected, when every row differs by a bias the parameters
// hold: out_proj_bias (added twice, or never), or W_o . b_v (b_v never added: each row's weights
// sum to 1, so a value bias reaches the output as W_o . b_v).
std::string bias_reading(const MhaParameters& p, const Tensor3& actual, const Tensor3& expected) {
    if (actual.shape() != expected.shape()) return {};
    if (rows_off_by(actual, expected, p.out_proj_bias, -1.0f))
        return "that vector is minus out_proj_bias: out_proj_bias is never added to the output";
    if (rows_off_by(actual, expected, p.out_proj_bias, 1.0f))
        return "that vector is out_proj_bias: out_proj_bias is added to the output twice";
    const std::size_t d = expected.shape()[2];
    if (p.in_proj_bias.size() == 3 * d) {
        Tensor1 reached = xt::zeros<float>({d});  // (d_model): W_o . b_v
        for (std::size_t r = 0; r < d; ++r)
            for (std::size_t c = 0; c < d; ++c) reached(r) += p.out_proj_weight(r, c) * p.in_proj_bias(2 * d + c);
        if (rows_off_by(actual, expected, reached, -1.0f))
            return "that vector is minus W_o . b_v: the value projection's bias (in_proj_bias's last d_model "
                   "values) is never added";
    }
    return {};
}

// Both readings of a wrong output, joined.
std::string output_reading(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                           const Tensor3& actual, const Tensor3& expected) {
    const std::string blocks = block_reading(p, query, key, value, actual, "B, N_q, d_model");
    const std::string bias = bias_reading(p, actual, expected);
    return blocks.empty() ? bias : bias.empty() ? blocks : blocks + "; " + bias;
}

// One call's per-head weights (B, H, N_q, N_k) on the subject.
Tensor4 weights_of(const Ex03& ex, const MhaParameters& p, const Tensor3& query, const Tensor3& key,
                   const Tensor3& value) {
    Tensor4 w;
    ex.multi_head_attention(p, query, key, value, w);
    return w;
}

// Checks one call in the lesson's order (step 2): the weights in two set-ups that isolate the
// query and the key projection (the other one made the identity); then the per-head weights
// (projections, scores, softmax); then the output; then the output in a set-up whose right
// weights are uniform (W_q = W_k = 0). Only the output's message says what matched before it (this
// call's own weights): a set-up's result says nothing certain about another call.
void expect_mha(const MhaParameters& p, const Tensor3& query, const Tensor3& key, const Tensor3& value,
                const Tensor3& expected_out, const Tensor4& expected_w, const std::string& label) {
    const std::size_t d = p.out_proj_weight.shape()[0];
    const std::string call =
        fmt::format("multi_head_attention(H = {}, d_model = {}{}, query {}, key {}){}", p.heads, d,
                    p.in_proj_bias.size() ? ", biases" : "", grade::shape_of(query), grade::shape_of(key), label);
    const Tensor2 identity = xt::eye<float>(d), zero = xt::zeros<float>({d, d});
    // The query projection: W_k = I and b_k = 0, so the scores are (query . W_q^T + b_q) . key^T.
    const MhaParameters q_only = with_block(p, 1, identity);
    Tensor4 w_probe;
    library_forward(q_only, query, key, value, w_probe);
    grade::expect<Ex03>(
        {.what = call + ", weights, set up with W_k = I, b_k = 0",
         .dims = "B, H, N_q, N_k",
         .explain = [&](const Tensor4& w) { return block_reading(q_only, query, key, value, w, "B, H, N_q, N_k"); },
         .exp_of_finite_inputs = true},
        [&](const Ex03& ex) { return weights_of(ex, q_only, query, key, value); }, w_probe);
    // The key projection: W_q = I and b_q = 0, so the scores are query . (key . W_k^T + b_k)^T.
    const MhaParameters k_only = with_block(p, 0, identity);
    library_forward(k_only, query, key, value, w_probe);
    grade::expect<Ex03>(
        {.what = call + ", weights, set up with W_q = I, b_q = 0",
         .dims = "B, H, N_q, N_k",
         .explain = [&](const Tensor4& w) { return block_reading(k_only, query, key, value, w, "B, H, N_q, N_k"); },
         .exp_of_finite_inputs = true},
        [&](const Ex03& ex) { return weights_of(ex, k_only, query, key, value); }, w_probe);
    // No "after" from the set-ups above: they are other calls, and the subject's bug may be what
    // a set-up hides (an identity block, zero scores). Only this call's own weights count below.
    const bool weights_ok = grade::expect<Ex03>(
        {.what = call + ", weights",
         .dims = "B, H, N_q, N_k",
         .explain = [&](const Tensor4& w) { return block_reading(p, query, key, value, w, "B, H, N_q, N_k"); },
         .exp_of_finite_inputs = true},
        [&](const Ex03& ex) { return weights_of(ex, p, query, key, value); }, expected_w);
    // The weights are made of the query and key projections only: the value projection comes after.
    const std::string after = weights_ok ? "the per-head weights" : "";
    grade::expect<Ex03>(
        {.what = call + ", output",
         .dims = "B, N_q, d_model",
         .after = after,
         .explain = [&](const Tensor3& out) { return output_reading(p, query, key, value, out, expected_out); },
         .exp_of_finite_inputs = true},
        [&](const Ex03& ex) {
            Tensor4 w;
            return ex.multi_head_attention(p, query, key, value, w);
        },
        expected_out);

    // The value projection: W_q = W_k = 0 and no q, k biases make every weight 1 / N_k, so the
    // output is W_o applied to the mean of (value . W_v^T + b_v) over the keys.
    const MhaParameters v_only = with_block(with_block(p, 0, zero), 1, zero);
    const Tensor3 out_probe = library_forward(v_only, query, key, value, w_probe);
    grade::expect<Ex03>(
        {.what = call +
                 ", output, set up with W_q = W_k = 0 and no q, k biases (right scores are then all 0, right weights "
                 "all 1/N_k)",
         .dims = "B, N_q, d_model",
         .explain =
             [&](const Tensor3& out) { return block_reading(v_only, query, key, value, out, "B, N_q, d_model"); },
         .exp_of_finite_inputs = true},
        [&](const Ex03& ex) {
            Tensor4 w;
            return ex.multi_head_attention(v_only, query, key, value, w);
        },
        out_probe);
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

TEST_CASE("multi_head_attention: self-attention matches the library (N from 1 to 6, H from 1 to 8, d_head from 1 to 8)",
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

TEST_CASE("multi_head_attention: one bias without the other, and scores in the hundreds stay finite", "[ex03]") {
    Random rng(5);
    const MultiHeadAttention m = MultiHeadAttention::random(16, 2, true, rng);
    const Tensor3 x = rng.normal<3>({2, 4, 16});  // (B, N, d_model)
    // in_proj_bias without out_proj_bias, then the other way round: each one is optional alone.
    for (const bool in_only : {true, false}) {
        MhaParameters p = parameters_of(m);
        (in_only ? p.out_proj_bias : p.in_proj_bias) = Tensor1();
        Tensor4 w;
        const Tensor3 out = library_forward(p, x, x, x, w);
        expect_mha(p, x, x, x, out, w, in_only ? " (in_proj_bias only)" : " (out_proj_bias only)");
    }
    // W_q and W_k times 30: scores in the hundreds, whose exp() overflows a float unless each
    // row's maximum is subtracted first.
    MhaParameters p = parameters_of(m);
    xt::view(p.in_proj_weight, xt::range(0, 32), xt::all()) *= 30.0f;
    Tensor4 w;
    const Tensor3 out = library_forward(p, x, x, x, w);
    expect_mha(p, x, x, x, out, w, " (W_q and W_k x 30: scores in the hundreds)");
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
                {.what = "multi_head_attention" + label + ", output",
                 .dims = "B, N_q, d_model",
                 .explain = [&](const Tensor3& got) { return bias_reading(p, got, out); },
                 .exp_of_finite_inputs = true},
                [&](const Ex03& ex) {
                    Tensor4 w;
                    return ex.multi_head_attention(p, query, key, value, w);
                },
                out);
            grade::expect<Ex03>(
                {.what = "multi_head_attention" + label + ", weights averaged over heads",
                 .dims = "B, N_q, N_k",
                 .exp_of_finite_inputs = true},
                [&](const Ex03& ex) {
                    Tensor4 w;
                    ex.multi_head_attention(p, query, key, value, w);
                    return Tensor3(xt::mean(w, {1}));
                },
                averaged);
        } else {
            expect_mha(p, query, key, value, out, npy::to_tensor<4>(npy::read(at / "weights.npy"), "weights"), label);
        }
        ++used;
    }
    CHECK(used >= 6);
}
