#include "headwise/io/heatmap.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace headwise;

namespace {

std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < s.size()) {
        const std::size_t end = s.find('\n', start);
        out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

const std::vector<std::string> abc{"a", "b", "c"};

}  // namespace

TEST_CASE("heatmap: weight 0 is blank, weight 1 is the darkest character, in between is ordered", "[heatmap]") {
    CHECK(heatmap_shade(0.0f) == ' ');
    CHECK(heatmap_shade(1.0f) == '@');
    CHECK(heatmap_shade(0.5f) == '+');   // round(0.5 * 9) = 5 -> " .:-=+" index 5
    CHECK(heatmap_shade(-3.0f) == ' ');  // clamped
    CHECK(heatmap_shade(7.0f) == '@');
    CHECK(heatmap_shade(std::nanf("")) == '?');
    for (float w = 0.0f; w < 1.0f; w += 0.01f) {
        CHECK(heatmap_ramp.find(heatmap_shade(w)) <= heatmap_ramp.find(heatmap_shade(w + 0.01f)));
    }
}

TEST_CASE("heatmap: plain text has a header of key labels and one row per query, no escape codes", "[heatmap]") {
    // A one-hot pattern: query i looks only at key (i + 1) % 3.
    Tensor2 w = xt::zeros<float>({3, 3});
    w(0, 1) = w(1, 2) = w(2, 0) = 1.0f;
    const auto lines = lines_of(heatmap(w, abc, abc));
    REQUIRE(lines.size() == 4);
    CHECK(lines[0] == "query \\ key a    b    c   ");
    CHECK(lines[1] == "a                @@@@     ");
    CHECK(lines[2] == "b                     @@@@");
    CHECK(lines[3] == "c           @@@@          ");
    CHECK(heatmap(w, abc, abc).find('\x1b') == std::string::npos);
}

TEST_CASE("heatmap: colour mode writes each weight on a grey from 232 (0) to 255 (1)", "[heatmap]") {
    CHECK(heatmap_grey(0.0f) == 232);
    CHECK(heatmap_grey(1.0f) == 255);
    Tensor2 w = {{1.0f, 0.0f}};
    HeatmapOptions o;
    o.color = true;
    const std::string map = heatmap(w, std::vector<std::string>{"q"}, std::vector<std::string>{"k0", "k1"}, o);
    CHECK_THAT(map, Catch::Contains("\x1b[48;5;255;30m1.00\x1b[0m"));  // black ink on white
    CHECK_THAT(map, Catch::Contains("\x1b[48;5;232;97m0.00\x1b[0m"));  // white ink on black
}

TEST_CASE("heatmap: large matrices are cut at max_size and say how much is left out", "[heatmap]") {
    const std::size_t n = 20;
    Tensor2 w = xt::zeros<float>({n, n});
    const auto labels = token_labels("", n);
    HeatmapOptions o;
    o.max_size = 4;
    const auto lines = lines_of(heatmap(w, labels, labels, o));
    REQUIRE(lines.size() == 6);  // header, 4 rows, a note
    CHECK_THAT(lines[0], Catch::EndsWith("(+16 keys)"));
    CHECK(lines[5] == "(16 more query rows not shown)");
}

TEST_CASE("heatmap: label counts that do not match the matrix are a programming error", "[heatmap]") {
    Tensor2 w = xt::zeros<float>({2, 3});
    CHECK_THROWS_AS(heatmap(w, abc, abc), std::logic_error);
}

TEST_CASE("heatmap: token labels are the sentence's words, then tok<i> past its end", "[heatmap]") {
    CHECK(token_labels("the black  cat", 5) == std::vector<std::string>{"the", "black", "cat", "tok3", "tok4"});
    CHECK(token_labels("the black cat sat", 2) == std::vector<std::string>{"the", "black"});
    CHECK(token_labels("", 0).empty());
}
