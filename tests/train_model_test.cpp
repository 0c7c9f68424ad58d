// tests for headwise/train/: the model's gradients against PyTorch autograd (a committed fixture,
// scripts/make-fixtures-train) and against finite differences in the model's own loss; the data;
// cross-entropy and AdamW on hand-worked cases; the checkpoint read back; the circuit measures on
// hand-made attention patterns.
#include "headwise/io/npy.hpp"
#include "headwise/model/safetensors.hpp"
#include "headwise/train/adamw.hpp"
#include "headwise/train/checkpoint.hpp"
#include "headwise/train/circuits.hpp"
#include "headwise/train/data.hpp"
#include "headwise/train/loss.hpp"
#include "headwise/train/model.hpp"
#include "headwise/train/trainer.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

using namespace headwise;
using namespace headwise::train;

namespace {

const std::string fixtures = HEADWISE_FIXTURES_DIR "/train/";

Batch fixture_batch() {
    const npy::Array a = npy::read(fixtures + "tokens.npy");
    Batch b;
    b.batch = a.shape.at(0);
    b.seq = a.shape.at(1);
    for (double v : a.values) b.tokens.push_back(std::int32_t(v));
    return b;
}

double loss_of(const Params& p, const Batch& b) {
    Activations acts;
    forward(p, b.tokens, b.batch, b.seq, acts);
    return cross_entropy(acts.logits, p.config.vocab, next_token_targets(b));
}

}  // namespace

TEST_CASE("one step's gradients match PyTorch autograd for every parameter", "[train][gradients]") {
    const Params params = load_checkpoint(fixtures + "params.safetensors");
    const Batch batch = fixture_batch();
    Params grads(params.config);
    const double loss = loss_and_grads(params, batch, grads);
    const auto expected = safetensors::File::open(fixtures + "grads.safetensors");
    CHECK(loss == Approx(std::stod(expected.metadata().at("loss"))).epsilon(1e-5));
    for (const ParamInfo& info : params.layout.params) {
        INFO(info.name);
        const std::vector<float> want = expected.read_f32(info.name, info.shape);
        float largest = 0.0f, diff = 0.0f;
        for (std::size_t i = 0; i < want.size(); ++i) {
            largest = std::max(largest, std::abs(want[i]));
            diff = std::max(diff, std::abs(grads.values[info.offset + i] - want[i]));
        }
        REQUIRE(largest > 0.0f);  // the fixture draws every parameter, so no gradient is all zero
        CHECK(diff <= 1e-4f * largest);
    }
}

TEST_CASE("gradients match central finite differences of the loss", "[train][gradients]") {
    const Params params = load_checkpoint(fixtures + "params.safetensors");
    const Batch batch = fixture_batch();
    Params grads(params.config);
    loss_and_grads(params, batch, grads);
    // Two entries of every tensor; a step of 1e-2 in float32 keeps the rounding of the loss small
    // against the change it measures (the loss is smooth: LayerNorm, softmax, no ReLU).
    for (const ParamInfo& info : params.layout.params) {
        for (std::size_t i : {std::size_t(0), info.count() / 2 + 1}) {
            INFO(info.name << "[" << i << "]");
            const float h = 1e-2f;
            Params plus = params, minus = params;
            plus.values[info.offset + i] += h;
            minus.values[info.offset + i] -= h;
            const double numeric = (loss_of(plus, batch) - loss_of(minus, batch)) / (2.0 * h);
            CHECK(grads.values[info.offset + i] == Approx(numeric).margin(2e-4).epsilon(2e-2));
        }
    }
}

TEST_CASE("the data repeats one segment of length 4 .. N/2 later in every sequence", "[train][data]") {
    Random rng(3);
    const Batch b = make_batch(rng, 200, 13, 7);
    REQUIRE(b.tokens.size() == 200u * 13u);
    std::size_t lengths_seen[7] = {};
    for (std::size_t s = 0; s < b.batch; ++s) {
        const Repeat& r = b.repeats[s];
        REQUIRE(r.length >= 4);
        REQUIRE(r.length <= 6);
        REQUIRE(r.second >= r.first + r.length);
        REQUIRE(r.second + r.length <= 13);
        for (std::size_t i = 0; i < r.length; ++i) CHECK(b.token(s, r.second + i) == b.token(s, r.first + i));
        ++lengths_seen[r.length];
    }
    CHECK(lengths_seen[4] > 0);
    CHECK(lengths_seen[6] > 0);
    CHECK_THROWS_AS(make_batch(rng, 1, 7, 5), usage_error);
}

TEST_CASE("cross-entropy and its gradient on a hand-worked row", "[train][loss]") {
    // logits (2, 3): row 0 = ln 1, ln 2, ln 1 (softmax 1/4, 1/2, 1/4), target 1; row 1 ignored.
    const std::vector<float> logits = {0.0f, std::log(2.0f), 0.0f, 5.0f, 1.0f, 2.0f};
    const std::vector<std::int32_t> targets = {1, -1};
    std::vector<float> d(6, 9.0f);
    CHECK(cross_entropy(logits, 3, targets, d) == Approx(std::log(2.0)));
    CHECK(d[0] == Approx(0.25));
    CHECK(d[1] == Approx(-0.5));
    CHECK(d[2] == Approx(0.25));
    CHECK(d[3] == 0.0f);
    CHECK(d[5] == 0.0f);
}

TEST_CASE("AdamW's first step moves each parameter by lr against its gradient's sign, after decay", "[train][adamw]") {
    AdamWOptions o;
    o.lr = 0.1f;
    o.weight_decay = 0.5f;
    AdamW opt(2, o);
    std::vector<float> p = {1.0f, -2.0f};
    opt.step(p, std::vector<float>{3.0f, -0.001f});
    // Bias correction makes m_hat = g and v_hat = g^2 on step 1: the update is lr * g / (|g| + eps).
    CHECK(p[0] == Approx(1.0 * (1 - 0.05) - 0.1).epsilon(1e-6));
    CHECK(p[1] == Approx(-2.0 * (1 - 0.05) + 0.1).epsilon(1e-5));
    // Step 2 with g = 0: m = 0.9 * 0.1 * 3, v = 0.999 * 0.001 * 9; corrected by 1 - 0.9^2, 1 - 0.999^2.
    const float before = p[0];
    opt.step(p, std::vector<float>{0.0f, 0.0f});
    const double m_hat = 0.27 / (1 - 0.81), v_hat = 0.008991 / (1 - 0.998001);
    CHECK(p[0] == Approx(before * 0.95 - 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8)).epsilon(1e-5));
}

TEST_CASE("a checkpoint reads back bit for bit, with the pinned names and metadata", "[train][checkpoint]") {
    test::TempDir dir;
    const Config c{.vocab = 9, .context = 8, .d_model = 6, .heads = 2, .layers = 3};
    Random rng(5);
    const Params p = init_params(c, rng);
    save_checkpoint(dir / "m.safetensors", p);
    const auto file = safetensors::File::open(dir / "m.safetensors");
    CHECK(file.metadata().at("heads") == "2");
    CHECK(file.metadata().at("layers") == "3");
    CHECK(file.info("layers.2.attn.in_proj_weight").shape == std::vector<std::size_t>{18, 6});
    CHECK(file.info("pos_embed.weight").shape == std::vector<std::size_t>{8, 6});
    const Params back = load_checkpoint(dir / "m.safetensors");
    CHECK(back.values == p.values);
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), {}) == 1);  // no temporary left
    CHECK_THROWS_AS(check_writable(dir / "no-such-dir" / "m.safetensors"), usage_error);
}

TEST_CASE("bad model sizes are refused with one line", "[train][config]") {
    Config c;
    c.heads = 5;
    CHECK_THROWS_WITH(check(c), Catch::Matchers::Contains("does not divide"));
    c.heads = 4;
    c.context = 7;
    CHECK_THROWS_AS(check(c), usage_error);
    c.context = 8;
    c.vocab = 1;
    CHECK_THROWS_AS(check(c), usage_error);
}

TEST_CASE("an untrained model's heads score about chance and ablation changes the copy loss", "[train][circuits]") {
    const Config c{.vocab = 16, .context = 12, .d_model = 8, .heads = 2, .layers = 2};
    Random rng(9);
    const Params p = init_params(c, rng);
    const Batch b = make_batch(rng, 64, 12, 16);
    const CircuitScores s = measure(p, b);
    REQUIRE(s.previous_token.size() == 2);
    REQUIRE(s.induction[1].size() == 2);
    for (const auto& layer : s.previous_token)
        for (float v : layer) CHECK((v > 0.0f && v < 0.6f));
    ForwardOptions cut;
    cut.ablate_layer = 0;
    cut.ablate_head = 1;
    CHECK(measure(p, b, cut).copy_loss != s.copy_loss);
}

TEST_CASE("the PyTorch loader of docs/11 reproduces headwise's logits from a checkpoint",
          "[train][checkpoint][python]") {
    // scripts/check-induction --logits: nn.Embedding, nn.LayerNorm and nn.MultiheadAttention on the
    // checkpoint, against headwise's forward. Exit 77 (skipped) where torch is not installed.
    test::TempDir dir;
    const Params params = load_checkpoint(fixtures + "params.safetensors");
    save_checkpoint(dir / "m.safetensors", params);
    Random rng(21);
    const Batch b = make_batch(rng, 5, params.config.context, params.config.vocab);
    Activations acts;
    forward(params, b.tokens, b.batch, b.seq, acts);
    Tensor2 tokens = Tensor2::from_shape({b.batch, b.seq});  // (B, N)
    std::copy(b.tokens.begin(), b.tokens.end(), tokens.begin());
    Tensor3 logits = Tensor3::from_shape({b.batch, b.seq, params.config.vocab});  // (B, N, V)
    std::copy(acts.logits.begin(), acts.logits.end(), logits.begin());
    npy::save(dir / "tokens.npy", tokens);
    npy::save(dir / "logits.npy", logits);
    const std::string command =
        fmt::format("'{}/scripts/check-induction' '{}' --logits '{}' '{}'", HEADWISE_TEST_SOURCE_DIR,
                    (dir / "m.safetensors").string(), (dir / "tokens.npy").string(), (dir / "logits.npy").string());
    const int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) std::exit(77);
    CHECK(WEXITSTATUS(status) == 0);
}
