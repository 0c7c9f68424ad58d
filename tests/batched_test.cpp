#include "headwise/reference/batched.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace headwise;

namespace {
// (1, H, rows, cols) from per-head matrices.
Tensor4 heads_of(std::initializer_list<Tensor2> per_head) {
    const auto& first = *per_head.begin();
    Tensor4 t = Tensor4::from_shape({1, per_head.size(), first.shape()[0], first.shape()[1]});
    std::size_t h = 0;
    for (const auto& m : per_head) xt::view(t, 0, h++) = m;
    return t;
}
}  // namespace

TEST_CASE("batched: scores are q . k^T times the scale, head by head", "[batched]") {
    // head 0: q = [[1, 2]], k = [[3, 4], [5, 6]] -> q.k^T = [11, 17]
    // head 1: q = [[1, 0]], k = [[0, 1], [2, 0]] -> q.k^T = [0, 2]
    const Tensor4 q = heads_of({Tensor2{{1.0f, 2.0f}}, Tensor2{{1.0f, 0.0f}}});
    const Tensor4 k = heads_of({Tensor2{{3.0f, 4.0f}, {5.0f, 6.0f}}, Tensor2{{0.0f, 1.0f}, {2.0f, 0.0f}}});
    const Tensor4 s = attention_scores(q, k, 0.5f);
    INFO("scores: " << fmt::format("{}", fmt::join(s, ", ")));
    // shape (1, 2, 1, 2) and every value, exactly: the products and the scale 0.5 are exact in float
    CHECK((s == heads_of({Tensor2{{5.5f, 8.5f}}, Tensor2{{0.0f, 1.0f}}})));
}

TEST_CASE("batched: weights . v mixes the value rows of each head", "[batched]") {
    // head 0: w = [[0.25, 0.75]], v = [[4, 8], [0, 4]] -> [1, 5]
    // head 1: w = [[1, 0]],       v = [[2, 3], [9, 9]] -> [2, 3]
    const Tensor4 w = heads_of({Tensor2{{0.25f, 0.75f}}, Tensor2{{1.0f, 0.0f}}});
    const Tensor4 v = heads_of({Tensor2{{4.0f, 8.0f}, {0.0f, 4.0f}}, Tensor2{{2.0f, 3.0f}, {9.0f, 9.0f}}});
    const Tensor4 out = apply_weights(w, v);
    INFO("out: " << fmt::format("{}", fmt::join(out, ", ")));
    CHECK((out == heads_of({Tensor2{{1.0f, 5.0f}}, Tensor2{{2.0f, 3.0f}}})));  // shape (1, 2, 1, 2) and every value
}

TEST_CASE("batched: q and k of different head counts are refused", "[batched]") {
    const Tensor4 q = xt::zeros<float>({1, 2, 3, 4});
    const Tensor4 k = xt::zeros<float>({1, 3, 3, 4});
    CHECK_THROWS_AS(attention_scores(q, k, 1.0f), usage_error);
    CHECK_THROWS_AS(apply_weights(xt::zeros<float>({1, 2, 3, 5}), q), usage_error);  // 5 keys vs 3 value rows
}
