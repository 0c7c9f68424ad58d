// headwise/reference/softmax.hpp -- numerically stable softmax over the last axis.
//
// softmax(x)_j = exp(x_j - m) / sum_i exp(x_i - m), with m = max_i x_i. Subtracting the row
// maximum changes nothing mathematically and keeps exp() from overflowing for logits like 1e4.
// A row that is entirely -inf (every position masked) becomes all zeros, never NaN.
#pragma once

#include "headwise/base/limits.hpp"
#include "headwise/base/tensor.hpp"

namespace headwise {

// In place on `rows` contiguous rows of `cols` floats.
void softmax_rows(float* data, std::size_t rows, std::size_t cols);

template <std::size_t Rank>
Tensor<Rank> softmax(Tensor<Rank> x) {
    static_assert(Rank >= 1);
    const std::size_t cols = x.shape()[Rank - 1];
    limits::charge_work(25.0 * double(x.size()), "softmax");  // a max, an exp, a sum and a divide per element
    if (cols != 0) softmax_rows(x.data(), x.size() / cols, cols);
    return x;
}

// Shannon entropy (natural log) of each row of probabilities: 0 = one-hot, ln(cols) = uniform.
template <std::size_t Rank>
xt::xtensor<float, Rank - 1> row_entropy(const Tensor<Rank>& p);

}  // namespace headwise
