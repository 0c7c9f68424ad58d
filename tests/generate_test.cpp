// tests for `headwise generate` (src/runner/cmd_generate.cpp), the real binary on the cached
// SmolLM2-135M-Instruct: greedy text and ids equal to the independent reference's, the same seed
// giving the same sample, --logits against the reference's logits, stdin, --chat, and bad input
// (exit 2, one line, nothing written). Flags refused before the model is needed are checked
// without it; the rest is skipped (exit 77) when it is not cached.
#include "headwise/io/npy.hpp"
#include "headwise/model/llama.hpp"
#include "decoder_fixtures.hpp"
#include "runner_test.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>

using namespace headwise;
using namespace headwise::test;
using Catch::Matchers::Contains;

namespace {

const fs::path fixtures = testing::decoder_fixtures;

void model_or_skip() { testing::decoder_path_or_skip(); }

nlohmann::json reference_prompt(std::size_t i) {
    std::ifstream in(fixtures / "reference_prompts.json");
    return nlohmann::json::parse(in)["prompts"][i];
}

Result generate(std::vector<std::string> args, const std::optional<std::string>& input = std::nullopt) {
    args.insert(args.begin(), "generate");
    return run_headwise(args, {}, input);
}

// "continuation ids (N): a b c" from stderr, as numbers.
std::vector<std::int32_t> continuation_ids(const std::string& err) {
    const std::string tag = "continuation ids (";
    const std::size_t at = err.find(tag);
    REQUIRE(at != std::string::npos);
    std::istringstream words(err.substr(err.find("): ", at) + 3, err.find('\n', at) - err.find("): ", at) - 3));
    std::vector<std::int32_t> ids;
    for (std::int32_t id; words >> id;) ids.push_back(id);
    return ids;
}

}  // namespace

TEST_CASE("generate refuses bad flags in one line with exit 2, before it needs the model", "[generate]") {
    for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"--prompt", "hi", "--top-p", "0"}, "--top-p 0: must be in (0, 1]"},
             {{"--prompt", "hi", "--top-p", "1.5"}, "--top-p 1.5: must be in (0, 1]"},
             {{"--prompt", "hi", "--temperature", "-1"}, "--temperature -1"},
             {{"--prompt", "hi", "--max-tokens", "-3"}, "--max-tokens -3"},
             {{"--prompt", "hi", "--max-tokens", "0"}, "give --logits FILE.npy"},
             {{"--prompt", ""}, "the prompt is empty"},
         }) {
        const Result r = generate(args);
        INFO(r.err);
        CHECK(r.code == 2);
        CHECK(r.err_lines() == 1);
        CHECK_THAT(r.err, Contains(says));
    }
}

TEST_CASE("generate names the missing model in one line, exit 2", "[generate]") {
    const TempDir empty;
    const Result r = run_headwise({"generate", "--prompt", "hi"}, {{"HEADWISE_DECODER_DIR", empty.path.string()}});
    CHECK(r.code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Contains("scripts/fetch-model"));
}

TEST_CASE("greedy generate prints the reference's 32-token continuation, ids and text", "[generate][model]") {
    model_or_skip();
    const auto p = reference_prompt(0);
    const Result r = generate({"--prompt", p["text"], "--max-tokens", "32", "--no-stop", "--exact", "--ids"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(continuation_ids(r.err) == p["greedy_ids"].get<std::vector<std::int32_t>>());
    CHECK_THAT(r.out, Contains(" Paris."));
    CHECK_THAT(r.err, Contains("tokens/s"));
}

TEST_CASE("the same seed samples the same text, another seed another", "[generate][model]") {
    model_or_skip();
    const std::vector<std::string> args{
        "--prompt", "Once upon a time", "--max-tokens", "12",   "--no-stop", "--temperature",
        "0.9",      "--top-k",          "50",           "--ids"};
    auto with_seed = [&](const char* seed) {
        std::vector<std::string> a = args;
        a.insert(a.end(), {"--seed", seed});
        const Result r = generate(a);
        REQUIRE(r.code == 0);
        return continuation_ids(r.err);
    };
    const auto a = with_seed("1"), b = with_seed("1"), c = with_seed("2");
    CHECK(a == b);
    CHECK(a != c);
}

TEST_CASE("the prompt's (N, V) logits written by --logits are the reference's to 1e-3 on the exact path",
          "[generate][model]") {
    model_or_skip();
    const auto p = reference_prompt(0);
    const TempDir dir;
    const Result r =
        generate({"--prompt", p["text"], "--max-tokens", "0", "--exact", "--logits", (dir / "l.npy").string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const npy::Array got = npy::read(dir / "l.npy");
    const npy::Array expected = npy::read(fixtures / p["logits"].get<std::string>());
    REQUIRE(got.shape == expected.shape);
    double diff = 0.0;
    for (std::size_t i = 0; i < got.values.size(); ++i)
        diff = std::max(diff, std::fabs(got.values[i] - expected.values[i]));
    CHECK(diff <= 1e-3);
}

TEST_CASE("generate reads the prompt from stdin, and --chat wraps it in the chat template", "[generate][model]") {
    model_or_skip();
    const Result piped = generate({"--max-tokens", "4", "--ids"}, std::string("The capital of France is"));
    REQUIRE(piped.code == 0);
    CHECK_THAT(piped.err, Contains("prompt ids (5): 504 3575 282 4649 314"));
    const Result chat = generate({"--chat", "--prompt", "Hi", "--max-tokens", "4", "--ids"});
    REQUIRE(chat.code == 0);
    CHECK_THAT(chat.err, Contains("prompt ids ("));
    CHECK_THAT(chat.err, Contains(" 1 "));  // <|im_start|> is one special token, id 1
}

TEST_CASE("a prompt past the context, or a damaged model file, is refused in one line and writes nothing",
          "[generate][model]") {
    model_or_skip();
    const TempDir dir;
    const Result long_prompt =
        generate({"--prompt", "hi", "--max-tokens", "9000", "--logits", (dir / "l.npy").string()});
    CHECK(long_prompt.code == 2);
    CHECK_THAT(long_prompt.err, Contains("past the model's context of 8192"));
    CHECK_FALSE(fs::exists(dir / "l.npy"));
    // the first 4 KiB of the real file: a truncated GGUF
    {
        std::ifstream in(llama::default_model_path(), std::ios::binary);
        std::string head(4096, '\0');
        in.read(head.data(), head.size());
        std::ofstream(dir / "cut.gguf", std::ios::binary) << head;
    }
    const Result cut = generate({"--prompt", "hi", "--model", (dir / "cut.gguf").string()});
    CHECK(cut.code == 2);
    CHECK(cut.err_lines() == 1);
    CHECK_THAT(cut.err, Contains("cut.gguf"));
}
