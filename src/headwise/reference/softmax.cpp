#include "headwise/reference/softmax.hpp"

#include "headwise/fast/vexp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace headwise {

void softmax_rows(float* data, std::size_t rows, std::size_t cols) {
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = data + r * cols;
        const float m = fast::row_max(row, cols);
        if (m == -std::numeric_limits<float>::infinity()) {  // fully masked: defined as zeros
            std::fill(row, row + cols, 0.0f);
            continue;
        }
        const float sum = fast::exp_shifted_sum(row, cols, m);
        const float inv = 1.0f / sum;
        for (std::size_t j = 0; j < cols; ++j) row[j] *= inv;
    }
}

template <std::size_t Rank>
xt::xtensor<float, Rank - 1> row_entropy(const Tensor<Rank>& p) {
    std::array<std::size_t, Rank - 1> shape;
    std::copy(p.shape().begin(), p.shape().end() - 1, shape.begin());
    auto out = xt::xtensor<float, Rank - 1>::from_shape(shape);
    const std::size_t cols = p.shape()[Rank - 1];
    for (std::size_t r = 0; r < out.size(); ++r) {
        double h = 0.0;
        for (std::size_t j = 0; j < cols; ++j) {
            const double x = p.data()[r * cols + j];
            if (x > 0.0) h -= x * std::log(x);
        }
        out.data()[r] = static_cast<float>(h);
    }
    return out;
}

template xt::xtensor<float, 1> row_entropy<2>(const Tensor<2>&);
template xt::xtensor<float, 2> row_entropy<3>(const Tensor<3>&);
template xt::xtensor<float, 3> row_entropy<4>(const Tensor<4>&);

}  // namespace headwise
