// tests for headwise/model/bert.hpp. The pieces against hand-worked values and a small BertLayer that
// transformers computed (tests/fixtures/bert/layer_d32_h4, always run); the whole all-MiniLM-L6-v2
// forward pass against transformers' outputs for every fixture sentence (skipped, exit 77, when
// the model is not cached): token ids exact, every layer's attention and hidden states within
// 1e-4, sentence embeddings at cosine >= 0.99999.
#include "headwise/model/bert.hpp"

#include "model_fixtures.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <cmath>
#include <cstdlib>

using namespace headwise;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const fs::path layer_dir = testing::bert_fixtures / "layer_d32_h4";

bert::Layer small_layer() {
    auto t1 = [](const char* n) { return testing::fixture<1>(layer_dir / (std::string(n) + ".npy")); };
    auto t2 = [](const char* n) { return testing::fixture<2>(layer_dir / (std::string(n) + ".npy")); };
    bert::Layer l;
    l.attention.heads = 4;
    l.attention.in_proj_weight = xt::concatenate(xt::xtuple(t2("w_q"), t2("w_k"), t2("w_v")), 0);
    l.attention.in_proj_bias = xt::concatenate(xt::xtuple(t1("b_q"), t1("b_k"), t1("b_v")), 0);
    l.attention.out_proj_weight = t2("w_o");
    l.attention.out_proj_bias = t1("b_o");
    l.ln1_gamma = t1("ln1_gamma");
    l.ln1_beta = t1("ln1_beta");
    l.w_1 = t2("w_1");
    l.b_1 = t1("b_1");
    l.w_2 = t2("w_2");
    l.b_2 = t1("b_2");
    l.ln2_gamma = t1("ln2_gamma");
    l.ln2_beta = t1("ln2_beta");
    return l;
}

Mask2 small_padding() { return npy::to_mask(npy::read(layer_dir / "key_padding_mask.npy"), "key_padding_mask"); }

}  // namespace

TEST_CASE("gelu is the erf form: gelu(1) = 0.841345, gelu(-1) = -0.158655, gelu(0) = 0", "[bert]") {
    const Tensor3 x = {{{1.0f, -1.0f, 0.0f, 3.0f}}};
    const Tensor3 y = bert::gelu(x);
    CHECK(y(0, 0, 0) == Approx(0.8413447).margin(1e-6));
    CHECK(y(0, 0, 1) == Approx(-0.1586553).margin(1e-6));
    CHECK(y(0, 0, 2) == 0.0f);
    CHECK(y(0, 0, 3) == Approx(2.9959502).margin(1e-6));  // the tanh form gives 2.9963627
}

TEST_CASE("layer_norm uses the biased variance: [1, 2, 3] -> [-1.2247, 0, 1.2247]", "[bert]") {
    const Tensor3 x = {{{1.0f, 2.0f, 3.0f}}};
    const Tensor1 gamma = {1.0f, 1.0f, 2.0f}, beta = {0.0f, 0.5f, 0.0f};
    const Tensor3 y = bert::layer_norm(x, gamma, beta, 1e-12f);
    CHECK(y(0, 0, 0) == Approx(-1.2247449).margin(1e-6));  // (1 - 2) / sqrt(2/3)
    CHECK(y(0, 0, 1) == Approx(0.5).margin(1e-6));
    CHECK(y(0, 0, 2) == Approx(2.4494897).margin(1e-6));
}

TEST_CASE("encoder_layer matches transformers' BertLayer on a padded batch, output and weights", "[bert]") {
    const Tensor3 x = testing::fixture<3>(layer_dir / "x.npy");
    const Tensor3 expected = testing::fixture<3>(layer_dir / "output.npy");
    const Tensor4 expected_w = testing::fixture<4>(layer_dir / "weights.npy");
    Tensor4 w;
    const Tensor3 y = bert::encoder_layer(small_layer(), x, small_padding(), 1e-12f, &w);
    CHECK(max_abs_diff(y, expected) < 1e-4);
    CHECK(max_abs_diff(w, expected_w) < 1e-5);
    // Without the weights the library's fused path runs: the same numbers.
    CHECK(max_abs_diff(bert::encoder_layer(small_layer(), x, small_padding(), 1e-12f), expected) < 1e-4);
    // No query looks at a padded key.
    const float on_padding = xt::amax(xt::view(w, 1, xt::all(), xt::all(), xt::range(4, 6)))();
    CHECK(on_padding == 0.0f);
}

TEST_CASE("without_head zeroes exactly that head's columns of W_O", "[bert]") {
    const bert::Layer l = small_layer();
    const bert::Layer cut = l.without_head(2);  // d_head = 8: columns 16..23
    const Tensor2& w = cut.attention.out_proj_weight;
    const float cut_columns = xt::amax(xt::abs(xt::view(w, xt::all(), xt::range(16, 24))))();
    CHECK(cut_columns == 0.0f);
    const bool rest_kept =
        xt::view(w, xt::all(), xt::range(0, 16)) == xt::view(l.attention.out_proj_weight, xt::all(), xt::range(0, 16));
    CHECK(rest_kept);
    CHECK_THROWS_WITH(l.without_head(4), Contains("no head 4"));
}

TEST_CASE("mean pooling ignores padded tokens and the result has unit length", "[bert]") {
    const Tensor3 x = {{{3.0f, 4.0f}, {3.0f, 4.0f}}, {{1.0f, 0.0f}, {100.0f, 100.0f}}};
    Mask2 pad = {{false, false}, {false, true}};
    const Tensor2 e = bert::mean_pool_normalize(x, pad);
    CHECK(e(0, 0) == Approx(0.6));
    CHECK(e(0, 1) == Approx(0.8));
    CHECK(e(1, 0) == Approx(1.0));
    CHECK(e(1, 1) == Approx(0.0).margin(1e-7));
}

TEST_CASE("make_batch pads on the right and marks the padding", "[bert]") {
    const bert::Batch b = bert::make_batch({{101, 7, 102}, {101, 102}}, 0);
    CHECK(b.ids[1] == std::vector<std::int32_t>{101, 102, 0});
    CHECK(b.padding(1, 2));
    CHECK_FALSE(b.padding(0, 2));
    CHECK_THROWS_WITH(bert::make_batch({}, 0), Contains("at least one"));
}

TEST_CASE("a missing model is one line that says how to get it", "[bert]") {
    const fs::path empty = fs::temp_directory_path() / "headwise-no-model";
    fs::create_directories(empty);
    CHECK_THROWS_WITH(bert::require_model(empty), Contains("no model.safetensors, vocab.txt, config.json") &&
                                                      Contains("scripts/fetch-model") &&
                                                      Contains("HEADWISE_MODEL_DIR"));
    ::setenv("HEADWISE_MODEL_DIR", empty.c_str(), 1);
    CHECK(bert::model_dir() == empty);
    ::unsetenv("HEADWISE_MODEL_DIR");
    fs::remove(empty);
}

TEST_CASE("read_config refuses a config that is not all-MiniLM's kind of BERT", "[bert]") {
    const fs::path p = fs::temp_directory_path() / fmt::format("headwise-config-{}.json", ::getpid());
    auto write = [&](const std::string& text) { std::ofstream(p) << text; };
    const std::string base =
        R"("vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6, "intermediate_size": 1536,
        "max_position_embeddings": 512, "type_vocab_size": 2)";
    write("{" + base + R"(, "num_attention_heads": 12})");
    CHECK(bert::read_config(p).d_head() == 32);
    write("{" + base + R"(, "num_attention_heads": 7})");
    CHECK_THROWS_WITH(bert::read_config(p), Contains("not divisible"));
    write("{" + base + R"(, "num_attention_heads": 12, "hidden_act": "gelu_new"})");
    CHECK_THROWS_WITH(bert::read_config(p), Contains("gelu_new"));
    write("{" + base + "}");
    CHECK_THROWS_WITH(bert::read_config(p), Contains("num_attention_heads"));
    write("{oops");
    CHECK_THROWS_WITH(bert::read_config(p), Contains("not valid JSON"));
    fs::remove(p);
}

// ---- the real model against transformers (skipped without the cached model) ----

namespace {

bert::ForwardOptions keep_all() {
    bert::ForwardOptions o;
    o.keep_attention = o.keep_hidden = true;
    return o;
}

struct Case {
    std::string name;
    nlohmann::json json;
};

std::vector<Case> cases() {
    std::vector<Case> out;
    const nlohmann::json manifest = testing::read_json(testing::bert_fixtures / "manifest.json");
    for (const auto& c : manifest["cases"]) out.push_back({c["name"].get<std::string>(), c});
    REQUIRE(out.size() >= 9);  // 7 single sentences and 2 padded batches
    return out;
}

}  // namespace

TEST_CASE("all-MiniLM-L6-v2: token ids equal transformers' for every fixture sentence", "[bert][model]") {
    const bert::Model& model = testing::model_or_skip_loaded();
    for (const Case& c : cases()) {
        INFO(c.name);
        const bert::Batch b = bert::tokenize(model, c.json["sentences"].get<std::vector<std::string>>());
        CHECK(b.ids == c.json["ids"].get<std::vector<std::vector<std::int32_t>>>());
    }
}

TEST_CASE("all-MiniLM-L6-v2: every layer's attention and hidden states within 1e-4 of transformers'", "[bert][model]") {
    const bert::Model& model = testing::model_or_skip_loaded();
    const std::size_t L = model.config.layers;
    double worst_attention = 0.0, worst_hidden = 0.0;
    for (const Case& c : cases()) {
        INFO(c.name);
        const bert::Batch b = bert::tokenize(model, c.json["sentences"].get<std::vector<std::string>>());
        const bert::Outputs out = bert::forward(model, b, keep_all());
        const Tensor4 attention =
            testing::fixture<4>(testing::bert_fixtures / c.name / "attention.npy");                  // (L*B, H, N, N)
        const Tensor3 hidden = testing::fixture<3>(testing::bert_fixtures / c.name / "hidden.npy");  // ((L+1)*B, N, d)
        const std::size_t B = b.size();
        REQUIRE(attention.shape()[0] == L * B);
        for (std::size_t l = 0; l <= L; ++l) {
            for (std::size_t s = 0; s < B; ++s) {
                const double dh =
                    max_abs_diff(Tensor2(xt::view(out.hidden[l], s)), Tensor2(xt::view(hidden, l * B + s)));
                worst_hidden = std::max(worst_hidden, dh);
                if (l == L) continue;
                const double da =
                    max_abs_diff(Tensor3(xt::view(out.attention[l], s)), Tensor3(xt::view(attention, l * B + s)));
                worst_attention = std::max(worst_attention, da);
            }
        }
    }
    WARN("largest difference: attention " << worst_attention << ", hidden states " << worst_hidden);
    CHECK(worst_attention <= 1e-4);
    CHECK(worst_hidden <= 1e-4);
}

TEST_CASE("all-MiniLM-L6-v2: sentence embeddings at cosine >= 0.99999 with transformers'", "[bert][model]") {
    const bert::Model& model = testing::model_or_skip_loaded();
    double worst = 1.0;
    for (const Case& c : cases()) {
        INFO(c.name);
        const bert::Batch b = bert::tokenize(model, c.json["sentences"].get<std::vector<std::string>>());
        const Tensor2 e = bert::forward(model, b).embedding;  // the fast path (no weights kept)
        const Tensor2 expected = testing::fixture<2>(testing::bert_fixtures / c.name / "embedding.npy");
        REQUIRE(e.shape() == expected.shape());
        for (std::size_t s = 0; s < b.size(); ++s) {
            const double cos = bert::cosine(&e(s, 0), &expected(s, 0), e.shape()[1]);
            worst = std::min(worst, cos);
            CHECK(cos >= 0.99999);
        }
    }
    WARN("smallest cosine: 1 - " << (1.0 - worst));
}

TEST_CASE("all-MiniLM-L6-v2: a sentence padded in a batch gets the embedding it gets alone", "[bert][model]") {
    const bert::Model& model = testing::model_or_skip_loaded();
    const std::vector<std::string> texts = {"Hello!", "Tokenization of unbelievably hyperparameterized words."};
    const Tensor2 together = bert::forward(model, bert::tokenize(model, texts)).embedding;
    const Tensor2 alone = bert::forward(model, bert::tokenize(model, {texts[0]})).embedding;
    CHECK(bert::cosine(&together(0, 0), &alone(0, 0), 384) > 0.999999);
    CHECK(max_abs_diff(Tensor1(xt::view(together, 0)), Tensor1(xt::view(alone, 0))) < 1e-5);
}

TEST_CASE("all-MiniLM-L6-v2: a pair is [CLS] a [SEP] b [SEP], and b's tokens get token type 1's embedding",
          "[bert][model]") {
    const bert::Model& model = testing::model_or_skip_loaded();
    const bert::Pair p = bert::encode_pair(model, "The cat sat.", "It was tired.");
    // BertTokenizer(a, b) gives the ids of "a [SEP] b" as one text (a literal [SEP] is one token).
    CHECK(p.batch.ids == bert::tokenize(model, {"The cat sat. [SEP] It was tired."}).ids);
    CHECK(p.boundary == 6);
    CHECK(p.tokens[5] == "[SEP]");
    CHECK(p.batch.token_types == std::vector<std::vector<std::int32_t>>{{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}});
    // embed() by hand: word + position + type row t, then the embedding LayerNorm.
    const std::size_t N = p.tokens.size(), d = model.config.d_model;
    Tensor3 sum = Tensor3::from_shape({1, N, d});  // (1, N, d_model)
    for (std::size_t i = 0; i < N; ++i) {
        const std::size_t t = i < p.boundary ? 0 : 1;
        for (std::size_t c = 0; c < d; ++c) {
            sum(0, i, c) = model.word_embeddings(static_cast<std::size_t>(p.batch.ids[0][i]), c) +
                           model.position_embeddings(i, c) + model.token_type_embeddings(t, c);
        }
    }
    const Tensor3 expected =
        bert::layer_norm(sum, model.embed_ln_gamma, model.embed_ln_beta, model.config.layer_norm_eps);
    CHECK(max_abs_diff(bert::embed(model, p.batch), expected) < 1e-6);
    bert::Batch wrong = p.batch;
    wrong.token_types[0].pop_back();
    CHECK_THROWS_WITH(bert::embed(model, wrong), Contains("token types must be (1, 11) like the ids"));
}
