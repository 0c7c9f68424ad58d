#include "headwise/reference/params.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace headwise;

// Every expected number below is worked out by hand in the comment beside it.

TEST_CASE("params: BERT-base attention block has 4*768^2 + 4*768 = 2,362,368 parameters", "[params]") {
    CHECK(params::attention_params(768, true) == 2'362'368);   // 2,359,296 + 3,072
    CHECK(params::attention_params(768, false) == 2'359'296);  // 4 * 589,824
    CHECK(params::attention_params(512, false) == 1'048'576);  // 4 * 262,144
}

TEST_CASE("params: walking a module's tensors counts every weight and bias once", "[params]") {
    Random rng(1);
    const auto m = MultiHeadAttention::random(768, 12, true, rng);
    const auto tensors = params::parameters_of(m);
    REQUIRE(tensors.size() == 4);
    CHECK(tensors[0].name == "in_proj_weight");
    CHECK(tensors[0].shape == std::vector<std::size_t>{2304, 768});
    CHECK(tensors[0].count == 1'769'472);  // 2304 * 768
    CHECK(params::total(tensors) == 2'362'368);

    const auto bare = MultiHeadAttention::random(64, 8, false, rng);
    CHECK(params::parameters_of(bare).size() == 2);               // no bias tensors listed
    CHECK(params::total(params::parameters_of(bare)) == 16'384);  // 4 * 64^2
}

TEST_CASE("params: the per-head layout holds the same numbers as the fused one", "[params]") {
    Random rng(2);
    const auto m = MultiHeadAttention::random(16, 4, true, rng);  // d_head = 4
    const auto p = params::split_per_head(m);
    REQUIRE(p.w_q.size() == 4);
    CHECK(p.w_q[0].shape() == std::array<std::size_t, 2>{4, 16});
    for (std::size_t c = 0; c < 16; ++c) {
        CHECK(p.w_q[1](0, c) == m.in_proj_weight(4, c));   // head 1 of W_Q starts at row 4
        CHECK(p.w_k[0](0, c) == m.in_proj_weight(16, c));  // W_K starts at row d_model = 16
        CHECK(p.w_v[3](3, c) == m.in_proj_weight(47, c));  // last row of W_V is row 3 * 16 - 1
    }
    CHECK(p.b_k[2](0) == m.in_proj_bias(16 + 8));
    // 4 heads * 3 * (4 * 16) + 16^2 + 4 heads * 3 * 4 + 16 = 768 + 256 + 48 + 16 = 1088 = 4*16^2 + 4*16
    CHECK(params::total(params::parameters_of(p)) == 1088);
    CHECK(params::per_head_params(16, 4, true) == 1088);
    CHECK(params::per_head_params(768, 12, true) == 2'362'368);
    CHECK(params::per_head_params(64, 8, false) == 16'384);  // 8 * 3 * 64 * 8 + 4096 = 12288 + 4096
}

TEST_CASE("params: the per-head layout lists what split_per_head makes, without allocating it", "[params]") {
    Random rng(3);
    const auto p = params::split_per_head(MultiHeadAttention::random(16, 4, true, rng));
    const auto real = params::parameters_of(p);
    const auto layout = params::per_head_layout(16, 4, true);
    REQUIRE(layout.size() == real.size());  // 4 heads * 3 weights + 4 heads * 3 biases + w_o + b_o = 26
    CHECK(layout.size() == 26);
    for (std::size_t i = 0; i < layout.size(); ++i) {
        CHECK(layout[i].name == real[i].name);
        CHECK(layout[i].shape == real[i].shape);
        CHECK(layout[i].count == real[i].count);
    }
    CHECK(params::per_head_layout(64, 8, false).size() == 25);  // 24 weights + w_o
    CHECK(params::total(params::per_head_layout(64, 8, false)) == 16'384);
}

TEST_CASE("params: d_model not divisible by heads is refused with the would-be d_head", "[params]") {
    try {
        params::per_head_params(64, 7, false);
        FAIL("expected a usage_error");
    } catch (const usage_error& e) {
        CHECK_THAT(std::string(e.what()), Catch::Contains("9.14"));  // 64 / 7 = 9.142857...
    }
}

TEST_CASE("params: FLOPs per token are 8 d^2 for projections plus 4 N d for attention", "[params]") {
    CHECK(params::flops_per_token(64, 5) == 34'048.0);  // 8 * 4096 + 4 * 5 * 64 = 32768 + 1280
    CHECK(params::flops_per_token(64, 0) == 32'768.0);
}

TEST_CASE("params: 32 heads x 4096^2 float weights take 2 GiB", "[params]") {
    CHECK(params::attention_matrix_bytes(1, 32, 4096) == 2'147'483'648ULL);  // 32 * 2^24 * 4 = 2^31
    CHECK(params::format_bytes(2'147'483'648.0) == "2.00 GiB");
    CHECK(params::format_bytes(512.0) == "512 B");
    CHECK(params::format_bytes(1536.0) == "1.50 KiB");
    const std::size_t huge = std::size_t{1} << 40;
    CHECK_THROWS_AS(params::attention_matrix_bytes(huge, 1, huge), usage_error);
}

TEST_CASE("params: the published configurations are the known ones", "[params]") {
    const auto models = params::known_models();
    const auto find = [&](std::string_view name) {
        return *std::find_if(models.begin(), models.end(), [&](const auto& m) { return m.name == name; });
    };
    CHECK(find("BERT-base").d_model == 768);
    CHECK(find("BERT-base").heads == 12);
    CHECK(find("Transformer base").heads == 8);
    CHECK(find("GPT-2 XL").d_model == 1600);
    CHECK(find("GPT-2 XL").heads == 25);
    CHECK(find("GPT-3 175B").d_model == 12288);
    CHECK(find("GPT-3 175B").heads == 96);
    // GPT-3: 4 * 12288^2 + 4 * 12288 = 603,979,776 + 49,152
    CHECK(params::attention_params(12288, true) == 604'028'928);
    for (const auto& m : models) CHECK(m.d_model % m.heads == 0);
}

TEST_CASE("params: valid head counts are the divisors of d_model", "[params]") {
    CHECK(params::valid_head_counts(64) == std::vector<std::size_t>{1, 2, 4, 8, 16, 32, 64});
    CHECK(params::valid_head_counts(12) == std::vector<std::size_t>{1, 2, 3, 4, 6, 12});
    CHECK(params::valid_head_counts(1) == std::vector<std::size_t>{1});
}

TEST_CASE("params: counts print with thousands separators", "[params]") {
    CHECK(params::group_digits(0) == "0");
    CHECK(params::group_digits(999) == "999");
    CHECK(params::group_digits(1000) == "1,000");
    CHECK(params::group_digits(2'362'368) == "2,362,368");
    CHECK(params::group_digits(57'986'777'088ULL) == "57,986,777,088");
}
