// Grader for exercise 05: parameter counts, fused and per head.
//
// Oracle: counts worked out by hand for published configurations (4 d^2 + 4 d with biases),
// written down as numbers. Counts are exact.
#include "05_parameter_count.hpp"
#include "grade.hpp"

#include <fmt/format.h>

using namespace headwise;
using grade::Ex05;

namespace {

struct Known {
    const char* model;
    std::size_t d_model, heads;
    std::size_t with_bias, without_bias;  // 4 d^2 + 4 d, 4 d^2
};
// Per attention block. H = 1 and d_head = 1 included.
const Known known[] = {
    {"Transformer base", 512, 8, 1'050'624, 1'048'576}, {"BERT base / GPT-2 small", 768, 12, 2'362'368, 2'359'296},
    {"GPT-2 XL", 1600, 25, 10'246'400, 10'240'000},      {"GPT-3 175B", 12288, 96, 604'028'928, 603'979'776},
    {"d_model 32, H 4", 32, 4, 4'224, 4'096},            {"d_model 1, H 1", 1, 1, 8, 4},
    {"one head", 64, 1, 16'640, 16'384},                 {"d_head 1", 64, 64, 16'640, 16'384},
};

using Count = std::size_t (*)(std::size_t, std::size_t, bool);

void expect_counts(const char* function, Count Ex05::*which, bool bias) {
    for (const Known& k : known) {
        grade::expect<Ex05>(
            fmt::format("{}(d_model = {}, heads = {}, bias = {}) for {}", function, k.d_model, k.heads, bias, k.model),
            [&](const Ex05& ex) { return (ex.*which)(k.d_model, k.heads, bias); },
            bias ? k.with_bias : k.without_bias, "parameters");
    }
}

}  // namespace

TEST_CASE("parameter_count: nn.MultiheadAttention with biases, from d_model 1 to GPT-3", "[ex05]") {
    expect_counts("parameter_count", &Ex05::parameter_count, true);
}

TEST_CASE("parameter_count: without biases it is 4 d_model^2", "[ex05]") {
    expect_counts("parameter_count", &Ex05::parameter_count, false);
}

TEST_CASE("per_head_parameter_count: with biases, the same totals", "[ex05]") {
    expect_counts("per_head_parameter_count", &Ex05::per_head_parameter_count, true);
}

TEST_CASE("per_head_parameter_count: without biases, the same totals", "[ex05]") {
    expect_counts("per_head_parameter_count", &Ex05::per_head_parameter_count, false);
}

TEST_CASE("both counts refuse heads that do not divide d_model, and heads = 0", "[ex05]") {
    for (Count Ex05::*which : {&Ex05::parameter_count, &Ex05::per_head_parameter_count}) {
        grade::expect_usage_error<Ex05>("count(d_model = 64, heads = 7)",
                                        [&](const Ex05& ex) { return (ex.*which)(64, 7, true); });
        grade::expect_usage_error<Ex05>("count(d_model = 64, heads = 0)",
                                        [&](const Ex05& ex) { return (ex.*which)(64, 0, true); });
    }
}
