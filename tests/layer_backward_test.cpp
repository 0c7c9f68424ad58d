// The attention layer's backward (reference/layer_backward.hpp) against PyTorch's float64 autograd
// of nn.MultiheadAttention and of the layer written out in torch for GQA, RoPE and ALiBi
// (tests/fixtures/backward/attend_*, scripts/make-fixtures-backward).
#include "headwise/reference/layer_backward.hpp"
#include "headwise/io/npy.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <utility>

using namespace headwise;

namespace {

const std::string dir = std::string(HEADWISE_FIXTURES_DIR) + "/backward/";

template <std::size_t R>
Tensor<R> load(const std::string& file) {
    return npy::to_tensor<R>(npy::read(file), file);
}

// Largest |got - want| over the largest |want|.
template <class T>
double relative_error(const T& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    double diff = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        diff = std::max(diff, std::abs(double(got.data()[i]) - want[i]));
        scale = std::max(scale, std::abs(want[i]));
    }
    return diff / std::max(scale, 1e-30);
}

}  // namespace

TEST_CASE("layer backward: every gradient matches PyTorch's float64 autograd within 1e-4", "[layer_backward]") {
    std::ifstream in(dir + "manifest.json");
    const auto manifest = nlohmann::json::parse(in);
    REQUIRE(manifest["attend_cases"].size() >= 12);
    for (const auto& c : manifest["attend_cases"]) {
        const std::string name = c["name"], folder = dir + name + "/";
        INFO(name);
        GroupedQueryAttention m;
        m.heads = c["heads"];
        m.kv_heads = c["kv_heads"].is_null() ? m.heads : std::size_t(c["kv_heads"]);
        m.in_proj_weight = load<2>(folder + "in_proj_weight.npy");
        m.out_proj_weight = load<2>(folder + "out_proj_weight.npy");
        if (c["bias"]) {
            m.in_proj_bias = load<1>(folder + "in_proj_bias.npy");
            m.out_proj_bias = load<1>(folder + "out_proj_bias.npy");
        }
        const Tensor3 query = load<3>(folder + "query.npy");
        const bool self = c["self_attention"];
        const Tensor3 key_file = self ? Tensor3{} : load<3>(folder + "key.npy");
        const Tensor3 value_file = self ? Tensor3{} : load<3>(folder + "value.npy");
        const Tensor3& key = self ? query : key_file;
        const Tensor3& value = self ? query : value_file;
        AttentionOptions options;
        options.causal = c["causal"];
        Mask2 padding;
        if (c["key_padding"]) {
            padding = npy::to_mask(npy::read(folder + "key_padding_mask.npy"), "key_padding_mask");
            options.key_padding_mask = &padding;
        }
        PositionEncoding positions;
        positions.alibi = c["alibi"];
        if (!c["rope"].is_null()) {
            positions.rope =
                Rope{c["rope"]["base"], c["rope"]["layout"] == "half" ? RopeLayout::half : RopeLayout::interleaved};
            positions.first_position = c["rope"]["positions_from"];
        }
        LayerTape tape;
        const Tensor3 y = layer_forward(m, query, key, value, positions, options, tape);
        CHECK(relative_error(y, npy::read(folder + "grads/output.npy").values) < 1e-5);
        const LayerGrads g = layer_backward(m, query, key, value, positions, options, std::move(tape),
                                            load<3>(folder + "grad_output.npy"));
        auto check = [&](const std::string& grad, const auto& got) {
            INFO(grad);
            CHECK(relative_error(got, npy::read(folder + "grads/" + grad + ".npy").values) < 1e-4);
        };
        check("query", g.query);
        if (!self) {
            check("key", g.key);
            check("value", g.value);
        } else {
            CHECK(g.key.size() == 0);
        }
        check("in_proj_weight", g.in_proj_weight);
        check("out_proj_weight", g.out_proj_weight);
        if (c["bias"]) {
            check("in_proj_bias", g.in_proj_bias);
            check("out_proj_bias", g.out_proj_bias);
        } else {
            CHECK(g.in_proj_bias.size() == 0);
        }
    }
}

TEST_CASE("layer backward: a d_y that is not the output's shape is refused, naming both", "[layer_backward]") {
    GroupedQueryAttention m;
    m.heads = m.kv_heads = 2;
    m.in_proj_weight = xt::ones<float>({24, 8});
    m.out_proj_weight = xt::ones<float>({8, 8});
    const Tensor3 x = xt::ones<float>({1, 3, 8});
    LayerTape tape;
    layer_forward(m, x, x, x, {}, {}, tape);
    const Tensor3 wrong = xt::ones<float>({1, 4, 8});
    CHECK_THROWS_WITH(layer_backward(m, x, x, x, {}, {}, std::move(tape), wrong),
                      Catch::Contains("(1, 3, 8)") && Catch::Contains("(1, 4, 8)"));
}
