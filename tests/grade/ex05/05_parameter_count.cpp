// Grader for exercise 05: parameter counts, fused and per head.
//
// Oracle: counts worked out by hand for published configurations (4 d^2 + 4 d with biases;
// 8 d^2 + 4 N d FLOPs per token; 4 B H N^2 bytes), written down as numbers. Counts are exact.
// The sizes reach past 32 bits on purpose: Megatron-LM's 1-trillion-parameter configuration has
// d_model = 25,600 (4 d^2 = 2,621,440,000 > 2^31), and long contexts pass 2^32 bytes and FLOPs,
// so counting in int or unsigned fails here (and signed overflow stops the sanitized grade build).
// Two milestones: [part1] the parameter counts (lesson 05, steps 1-3), [part2] FLOPs and
// attention memory against N (step 5), the lesson's harder half.
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
    {"Transformer base", 512, 8, 1'050'624, 1'048'576},
    {"BERT base / GPT-2 small", 768, 12, 2'362'368, 2'359'296},
    {"GPT-2 XL", 1600, 25, 10'246'400, 10'240'000},
    {"GPT-3 175B", 12288, 96, 604'028'928, 603'979'776},
    {"d_model 32, H 4", 32, 4, 4'224, 4'096},
    {"d_model 1, H 1", 1, 1, 8, 4},
    {"one head", 64, 1, 16'640, 16'384},
    {"d_head 1", 64, 64, 16'640, 16'384},
    {"Megatron-LM 1T", 25600, 160, 2'621'542'400, 2'621'440'000},
};

using Count = std::size_t (*)(std::size_t, std::size_t, bool);

// A wrong count read as the formula's terms: 4 weight matrices (d_model^2 each) and 4 bias
// vectors (d_model each); per head also d_model x d_head blocks and d_head-wide biases.
std::string count_reading(std::size_t got, std::size_t expected, std::size_t d, std::size_t heads) {
    const std::size_t d_head = heads == 0 ? 0 : d / heads;
    const grade::Term terms[] = {{"weight matrix", "d_model^2", d * d},
                                 {"bias vector", "d_model", d},
                                 {"per-head weight block", "d_model x d_head", d * d_head},
                                 {"per-head bias", "d_head", d_head}};
    return grade::count_difference(got, expected, terms);
}

void expect_counts(const char* function, Count Ex05::*which, bool bias) {
    for (const Known& k : known) {
        const std::size_t expected = bias ? k.with_bias : k.without_bias;
        grade::expect<Ex05>(
            {.what = fmt::format("{}(d_model = {}, heads = {}, bias = {}) for {}", function, k.d_model, k.heads, bias,
                                 k.model),
             .dims = "parameters",
             .explain = [&](std::size_t got) { return count_reading(got, expected, k.d_model, k.heads); }},
            [&](const Ex05& ex) { return (ex.*which)(k.d_model, k.heads, bias); }, expected);
    }
}

}  // namespace

TEST_CASE("parameter_count: nn.MultiheadAttention with biases, from d_model 1 to GPT-3", "[ex05][part1]") {
    expect_counts("parameter_count", &Ex05::parameter_count, true);
}

TEST_CASE("parameter_count: without biases it is 4 d_model^2", "[ex05][part1]") {
    expect_counts("parameter_count", &Ex05::parameter_count, false);
}

TEST_CASE("per_head_parameter_count: with biases, the same totals", "[ex05][part1]") {
    expect_counts("per_head_parameter_count", &Ex05::per_head_parameter_count, true);
}

TEST_CASE("per_head_parameter_count: without biases, the same totals", "[ex05][part1]") {
    expect_counts("per_head_parameter_count", &Ex05::per_head_parameter_count, false);
}

TEST_CASE("attention_flops_per_token: 8 d_model^2 + 4 N d_model, past 2^32 at Megatron-LM's width", "[ex05][part2]") {
    struct Case {
        std::size_t d_model, context;
        std::uint64_t flops;
    };
    // d_model = N = 1 last: there every term of the formula is the same number.
    const Case cases[] = {{64, 1, 33'024},
                          {512, 512, 3'145'728},
                          {4096, 32768, 671'088'640},
                          {12288, 2048, 1'308'622'848},
                          {25600, 2048, 5'452'595'200},
                          {25600, 131072, 18'664'652'800},
                          // Odd sizes whose products need more than float's 24 bits: a count
                          // computed in float rounds them.
                          {999, 99999, 407'580'012},
                          {12345, 6789, 1'554'433'020},
                          {1, 1, 12}};
    for (const Case& c : cases) {
        // 8 d^2 + 4 N d: four projections of 2 d^2 (a multiply and an add per weight), and two
        // products with the N keys (the scores and the weighted sum) of 2 N d each.
        const grade::Term terms[] = {{"projection", "2 d_model^2", 2 * c.d_model * c.d_model},
                                     {"product with the keys", "2 N d_model", 2 * c.context * c.d_model}};
        grade::expect<Ex05>(
            {.what = fmt::format("attention_flops_per_token(d_model = {}, N = {})", c.d_model, c.context),
             .dims = "FLOPs",
             .explain = [&](std::size_t got) { return grade::count_difference(got, std::size_t(c.flops), terms); }},
            [&](const Ex05& ex) { return std::size_t(ex.attention_flops_per_token(c.d_model, c.context)); },
            std::size_t(c.flops));
    }
}

TEST_CASE("attention_matrix_bytes: 4 B H N^2, past 2^32 at long context", "[ex05][part2]") {
    struct Case {
        std::size_t batch, heads, context;
        std::uint64_t bytes;
    };
    const Case cases[] = {{1, 1, 1, 4},
                          {1, 8, 512, 8'388'608},
                          {4, 12, 1024, 201'326'592},
                          {1, 96, 2048, 1'610'612'736},
                          {2, 160, 8192, 85'899'345'920},
                          {3, 40, 50000, 1'200'000'000'000},
                          {1, 32, 131072, 2'199'023'255'552},
                          // Odd sizes whose N^2 a float cannot hold exactly (past 2^24): counts are exact.
                          {1, 1, 4097, 67'141'636},
                          {3, 7, 99999, 839'983'200'084}};
    for (const Case& c : cases) {
        grade::expect<Ex05>(
            {.what = fmt::format("attention_matrix_bytes(B = {}, H = {}, N = {})", c.batch, c.heads, c.context),
             .dims = "bytes"},
            [&](const Ex05& ex) { return std::size_t(ex.attention_matrix_bytes(c.batch, c.heads, c.context)); },
            std::size_t(c.bytes));
    }
}

TEST_CASE("both counts refuse heads that do not divide d_model, and heads = 0", "[ex05][part1]") {
    for (Count Ex05::*which : {&Ex05::parameter_count, &Ex05::per_head_parameter_count})
        for (const bool bias : {true, false}) {
            grade::expect_usage_error<Ex05>(fmt::format("count(d_model = 64, heads = 7, bias = {})", bias),
                                            [&](const Ex05& ex) { return (ex.*which)(64, 7, bias); });
            grade::expect_usage_error<Ex05>(fmt::format("count(d_model = 64, heads = 0, bias = {})", bias),
                                            [&](const Ex05& ex) { return (ex.*which)(64, 0, bias); });
        }
}
