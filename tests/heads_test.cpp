// tests for `headwise heads` (src/runner/cmd_heads.cpp), the real binary on the cached model:
// its .npy outputs against transformers' attention and embedding for the same sentence
// (tests/fixtures/bert/tired), the head roles it prints, its --html page against its own .npy,
// sentence pairs, and bad input (exit 2, one line, no file). Skipped (exit 77) without the model,
// except the checks that come before the model is needed.
#include "runner_test.hpp"

#include "head_view_page.hpp"
#include "model_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace headwise;
using namespace headwise::test;
using Catch::Matchers::Contains;

namespace {

// The sentence of the committed transformers fixtures (tests/fixtures/bert/tired).
const std::string tired = "The dog could not jump the fence because it was too tired.";

// `headwise heads` with `args`, which must succeed (its stderr shown when it does not).
Result heads(const std::vector<std::string>& args) {
    std::vector<std::string> command{"heads"};
    command.insert(command.end(), args.begin(), args.end());
    const Result r = run_headwise(command);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return r;
}

}  // namespace

TEST_CASE("heads writes (L, H, N, N) attention and the embedding as transformers computes them", "[heads][model]") {
    testing::model_or_skip();
    TempDir out;
    const std::string att = (out.path / "att.npy").string(), emb = (out.path / "emb.npy").string();
    const Result r = heads({"--sentence", tired, "--attention", att, "--embedding", emb});
    CHECK_THAT(r.out, Contains("tokens (15): [CLS] the dog could not jump"));
    CHECK_THAT(r.out, Contains("layer 0 head 2: previous-token 1.000"));  // the sharpest head of layer 0 by default
    const Tensor4 a = testing::fixture<4>(att);                           // (6, 12, 15, 15)
    const Tensor4 expected = testing::fixture<4>(testing::bert_fixtures / "tired" / "attention.npy");
    CHECK(max_abs_diff(a, expected) < 1e-4);
    const Tensor1 e = testing::fixture<1>(emb);  // (384,)
    const Tensor2 expected_e = testing::fixture<2>(testing::bert_fixtures / "tired" / "embedding.npy");
    REQUIRE(e.size() == 384);
    CHECK(bert::cosine(e.data(), expected_e.data(), 384) > 0.99999);
}

TEST_CASE("heads draws the head that --layer and --head name, and refuses one the model lacks", "[heads][model]") {
    testing::model_or_skip();
    const Result r = heads({"--sentence", "Hello, world!", "--layer", "1", "--head", "8"});
    CHECK_THAT(r.out, Contains("layer 1 head 8: previous-token"));
    const Result bad = run_headwise({"heads", "--sentence", "Hello", "--head", "12"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Contains("--head 12 is outside 0..11"));
}

namespace {

// Every file in `dir`, so a test can say nothing was left behind (temporary files included).
std::vector<std::string> files_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    return names;
}

}  // namespace

TEST_CASE("heads --html writes the page with the weights --attention writes, each head's role and cosine",
          "[heads][model][head_view]") {
    testing::model_or_skip();
    TempDir out;
    const std::string html = (out.path / "heads.html").string(), att = (out.path / "att.npy").string();
    const Result r = heads({"--sentence", tired, "--html", html, "--attention", att});
    CHECK_THAT(r.out, Contains("wrote " + html));
    const nlohmann::json j = testing::head_view_data(read_text(html));
    const Tensor4 a = testing::fixture<4>(att);  // (6, 12, 15, 15)
    REQUIRE(j.at("tokens").size() == 15);
    CHECK(j["tokens"][9] == "it");
    CHECK(j.at("boundary") == 0);
    REQUIRE(j.at("weights").size() == 6);
    double worst = 0.0;
    for (std::size_t l = 0; l < 6; ++l)
        for (std::size_t h = 0; h < 12; ++h)
            for (std::size_t i = 0; i < 15 * 15; ++i)
                worst = std::max(worst, std::abs(j["weights"][l][h][i].get<double>() - a(l, h, i / 15, i % 15)));
    CHECK(worst <= 1e-5);
    CHECK(j["roles"][0][2] == "previous-token");  // lesson 07's L0H2, 1.000 on the previous token
    for (const auto& layer : j.at("ablation"))
        for (const auto& c : layer) CHECK((c.get<double>() > 0.5 && c.get<double>() <= 1.0 + 1e-6));
    CHECK(fs::file_size(html) < 1'000'000);
}

TEST_CASE("heads --sentence-b runs the pair [CLS] a [SEP] b [SEP] and the page marks where b starts",
          "[heads][model][head_view]") {
    testing::model_or_skip();
    TempDir out;
    const std::string html = (out.path / "pair.html").string(), pair = (out.path / "pair.npy").string(),
                      flat = (out.path / "flat.npy").string();
    const Result r =
        heads({"--sentence", "The cat sat.", "--sentence-b", "It was tired.", "--html", html, "--embedding", pair});
    CHECK_THAT(r.out, Contains("tokens (11): [CLS] the cat sat . [SEP] it was tired . [SEP]"));
    const nlohmann::json j = testing::head_view_data(read_text(html));
    CHECK(j.at("boundary") == 6);  // "it", the first token of b
    // The same ids as one sentence (a literal [SEP] stays one token) differ only in the token
    // types, so a different embedding shows that the second sentence is run as type 1.
    const Result one = heads({"--sentence", "The cat sat. [SEP] It was tired.", "--embedding", flat});
    CHECK_THAT(one.out, Contains("tokens (11): [CLS] the cat sat . [SEP] it was tired . [SEP]"));
    const Tensor1 e_pair = testing::fixture<1>(pair), e_flat = testing::fixture<1>(flat);  // (384,)
    CHECK(bert::cosine(e_pair.data(), e_flat.data(), 384) < 0.9999);
}

TEST_CASE("heads refuses an empty sentence with one line, before it needs the model", "[heads][head_view]") {
    TempDir out;
    const std::string html = (out.path / "x.html").string();
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"heads", "--sentence", "  ", "--html", html},
                                               {"heads", "--sentence", "Fine.", "--sentence-b", "", "--html", html}}) {
        const Result r = run_headwise(args);
        CHECK(r.code == 2);
        CHECK(r.err_lines() == 1);
        CHECK_THAT(r.err, Contains("is empty"));
    }
    CHECK(files_in(out.path).empty());
}

TEST_CASE("heads --html refuses an unwritable path or too long a text with one line, leaving no file",
          "[heads][model][head_view]") {
    testing::model_or_skip();
    TempDir out;
    const std::string html = (out.path / "x.html").string();
    std::string long_text;
    for (int i = 0; i < 600; ++i) long_text += "word ";
    const struct {
        std::vector<std::string> args;
        std::string says;
    } cases[] = {
        {{"heads", "--sentence", "Fine.", "--html", (out.path / "missing" / "x.html").string()}, "does not exist"},
        {{"heads", "--sentence", "Fine.", "--html", out.path.string()}, "is a directory"},
        {{"heads", "--sentence", long_text, "--html", html}, "the model takes at most 512"},
        {{"heads", "--sentence", long_text.substr(0, 1500), "--sentence-b", long_text.substr(0, 1500), "--html", html},
         "the pair is 603 tokens long"},
    };
    for (const auto& c : cases) {
        const Result r = run_headwise(c.args);
        INFO(r.err);
        CHECK(r.code == 2);
        CHECK(r.err_lines() == 1);
        CHECK_THAT(r.err, Contains(c.says));
        CHECK(r.out.empty());
    }
    CHECK(files_in(out.path).empty());  // no page, no temporary file
}
