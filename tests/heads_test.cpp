// tests for `headwise heads` (src/runner/cmd_heads.cpp), the real binary on the cached model:
// its .npy outputs against transformers' attention and embedding for the same sentence
// (tests/fixtures/bert/tired), and the head roles it prints. Skipped (exit 77) without the model.
#include "runner_test.hpp"

#include "model_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace headwise;
using namespace headwise::test;
using Catch::Matchers::Contains;

TEST_CASE("heads writes (L, H, N, N) attention and the embedding as transformers computes them", "[heads][model]") {
    testing::model_or_skip();
    TempDir out;
    const std::string att = (out.path / "att.npy").string(), emb = (out.path / "emb.npy").string();
    const Result r = run_headwise({"heads", "--sentence", "The dog could not jump the fence because it was too tired.",
                                   "--attention", att, "--embedding", emb});
    INFO(r.err);
    REQUIRE(r.code == 0);
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
    const Result r = run_headwise({"heads", "--sentence", "Hello, world!", "--layer", "1", "--head", "8"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("layer 1 head 8: previous-token"));
    const Result bad = run_headwise({"heads", "--sentence", "Hello", "--head", "12"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Contains("--head 12 is outside 0..11"));
}
