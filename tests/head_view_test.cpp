// tests for headwise/io/head_view.hpp: the page carries the data it was given (parsed back out of
// the file), fetches nothing, cannot be broken out of by a token, and refuses data that do not fit
// together without leaving a file behind. The page's behaviour in a browser: tests/browser/.
#include "headwise/io/head_view.hpp"

#include "head_view_page.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

using namespace headwise;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
using headwise::test::TempDir;

namespace {

// Two layers of three heads over four tokens, every weight different.
head_view::Data sample() {
    head_view::Data d;
    d.title = "the cat sat";
    d.subtitle = "hand-made weights";
    d.tokens = {"[CLS]", "the", "cat", "[SEP]"};
    for (std::size_t l = 0; l < 2; ++l) {
        Tensor3 w = Tensor3::from_shape({3, 4, 4});  // (H, N, N)
        for (std::size_t i = 0; i < w.size(); ++i) w.data()[i] = static_cast<float>((i * 37 + l * 11) % 101) / 101.0f;
        d.weights.push_back(w);
    }
    d.roles = {{"previous-token", "broad", "[CLS] sink"}, {"mixed", "sharp", "next-token"}};
    d.ablation = {{0.99, 0.98, 0.5}, {1.0, 0.97, 0.96}};
    d.ablation_label = "cosine to the full output";
    return d;
}

}  // namespace

TEST_CASE("head view: the page carries every weight within 5e-6, the tokens, roles and cosines", "[head_view]") {
    const head_view::Data d = sample();
    const nlohmann::json j = testing::head_view_data(head_view::render(d));
    CHECK(j.at("tokens") == nlohmann::json(d.tokens));
    CHECK(j.at("title") == "the cat sat");
    CHECK(j.at("boundary") == 0);
    REQUIRE(j.at("weights").size() == 2);
    for (std::size_t l = 0; l < 2; ++l) {
        REQUIRE(j["weights"][l].size() == 3);
        for (std::size_t h = 0; h < 3; ++h) {
            REQUIRE(j["weights"][l][h].size() == 16);
            for (std::size_t q = 0; q < 4; ++q)
                for (std::size_t k = 0; k < 4; ++k)
                    CHECK(std::abs(j["weights"][l][h][q * 4 + k].get<double>() - d.weights[l](h, q, k)) <= 5e-6);
        }
    }
    CHECK(j.at("roles")[0][2] == "[CLS] sink");
    CHECK(j.at("ablation")[0][2].get<double>() == Approx(0.5));
}

TEST_CASE("head view: optional roles and ablation are null, and the pair's boundary is kept", "[head_view]") {
    head_view::Data d = sample();
    d.roles.clear();
    d.ablation.clear();
    d.boundary = 2;
    const nlohmann::json j = testing::head_view_data(head_view::render(d));
    CHECK(j.at("roles").is_null());
    CHECK(j.at("ablation").is_null());
    CHECK(j.at("boundary") == 2);
}

TEST_CASE("head view: the page fetches nothing -- no src, no remote href, no url(), no import", "[head_view]") {
    const std::string page = head_view::render(sample());
    CHECK_THAT(page, !Contains(" src="));
    CHECK_THAT(page, !Contains("url("));
    CHECK_THAT(page, !Contains("@import"));
    CHECK_THAT(page, !Contains("fetch("));
    CHECK_THAT(page, !Contains("XMLHttpRequest"));
    // The only addresses are the SVG namespace (a name, never loaded) and the empty data: icon.
    const std::regex address(R"((https?:)?//[a-z0-9.-]+\.[a-z]{2,})", std::regex::icase);
    for (auto it = std::sregex_iterator(page.begin(), page.end(), address); it != std::sregex_iterator(); ++it)
        CHECK(it->str() == "http://www.w3.org");
    std::smatch href;
    for (auto at = page.cbegin(); std::regex_search(at, page.cend(), href, std::regex(R"(href="([^"]*)\")"));
         at = href.suffix().first)
        CHECK(href[1].str() == "data:,");
}

TEST_CASE("head view: a token cannot end the data's script element or break its JSON", "[head_view]") {
    head_view::Data d = sample();
    d.tokens[1] = "</script><script>alert(1)</script>";
    d.tokens[2] = "quote\" back\\slash\ttab";
    const std::string page = head_view::render(d);
    CHECK_THAT(page, !Contains("</script><script>alert"));
    const nlohmann::json j = testing::head_view_data(page);
    CHECK(j["tokens"][1] == d.tokens[1]);
    CHECK(j["tokens"][2] == d.tokens[2]);
}

TEST_CASE("head view: data that do not fit together are refused with the reason", "[head_view]") {
    head_view::Data d = sample();
    d.tokens.pop_back();
    CHECK_THROWS_WITH(head_view::render(d), Contains("layer 0 weights are (3, 4, 4); expected (H=3, N=3, N=3)"));
    d = sample();
    d.roles.pop_back();
    CHECK_THROWS_WITH(head_view::render(d), Contains("roles must be one per layer and head (2 x 3)"));
    d = sample();
    d.ablation[1].push_back(0.5);
    CHECK_THROWS_WITH(head_view::render(d), Contains("ablation cosines must be one per layer and head"));
    d = sample();
    d.weights[1](0, 0, 0) = std::nanf("");
    CHECK_THROWS_WITH(head_view::render(d), Contains("layer 1 has a weight that is not finite"));
    d = sample();
    d.boundary = 4;
    CHECK_THROWS_WITH(head_view::render(d), Contains("boundary 4 is not inside the 4 tokens"));
    d.weights.clear();
    CHECK_THROWS_WITH(head_view::render(d), Contains("no layers"));
}

TEST_CASE("head view: write() puts the page in place, and a failure leaves no file at all", "[head_view]") {
    TempDir dir;
    const fs::path target = dir.path / "heads.html";
    head_view::write(target, sample());
    std::ifstream in(target);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str() == head_view::render(sample()));

    head_view::Data bad = sample();
    bad.roles.pop_back();
    const fs::path other = dir.path / "bad.html";
    CHECK_THROWS_AS(head_view::write(other, bad), usage_error);
    CHECK_THROWS_WITH(head_view::write(dir.path / "missing" / "x.html", sample()), Contains("does not exist"));
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++files;
    CHECK(files == 1);  // heads.html only: no bad.html, no temporary file
}
