// headwise/base/tensor.hpp -- the tensor types every lesson uses.
//
// Rank lives in the type (xt::xtensor<float, N>), so a (B, H, N, d_head) tensor can never be
// handed to a function expecting (B, N, d_model) by accident. Dimension order is PyTorch's.
#pragma once

#include <xtensor/xtensor.hpp>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace headwise {

template <std::size_t Rank>
using Tensor = xt::xtensor<float, Rank>;

using Tensor1 = Tensor<1>;  // e.g. a bias (d_model)
using Tensor2 = Tensor<2>;  // e.g. a weight (out_features, in_features)
using Tensor3 = Tensor<3>;  // e.g. activations (B, N, d_model)
using Tensor4 = Tensor<4>;  // e.g. per-head tensors (B, H, N, d_head)

using Mask2 = xt::xtensor<bool, 2>;  // true = this position is masked out (PyTorch's convention)

// The shapes of a multi-head attention problem, named as in the lessons.
struct Dims {
    std::size_t batch = 2;  // B
    std::size_t seq = 5;    // N
    std::size_t d_model = 64;
    std::size_t heads = 8;  // H
    std::size_t d_head() const { return d_model / heads; }
};

// Bad input from a learner or a file: reported as one line and exit code 2 (see cli.hpp).
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace headwise
