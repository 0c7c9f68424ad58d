// headwise/base/random.hpp -- seeded random tensors, bit-identical on every platform.
//
// std::normal_distribution is implemented differently by each standard library, so the same
// seed would print different numbers on a learner's Mac and in CI. This generator uses only
// integer arithmetic (SplitMix64) and exact float operations: same seed, same values, anywhere.
#pragma once

#include "headwise/base/limits.hpp"
#include "headwise/base/tensor.hpp"

#include <cstdint>

namespace headwise {

class Random {
public:
    explicit Random(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next_u64();
    // Uniform in [0, 1) with 24 random bits: exactly representable as a float.
    float uniform01();
    float uniform(float lo, float hi) { return lo + (hi - lo) * uniform01(); }
    // Approximately standard normal: the sum of 12 uniforms minus 6 (Irwin-Hall).
    // Mean 0 and variance 1 exactly; tails are cut at +-6, which no lesson notices.
    float normal();

    template <std::size_t Rank>
    Tensor<Rank> normal(const std::array<std::size_t, Rank>& shape, float stddev = 1.0f) {
        limits::charge_work(650.0 * elements(shape),
                            "random normal values");  // 12 draws: ~13 ns, as long as 650 BLAS flops
        Tensor<Rank> t = Tensor<Rank>::from_shape(shape);
        for (auto& x : t) x = stddev * normal();
        return t;
    }

    template <std::size_t Rank>
    Tensor<Rank> uniform(const std::array<std::size_t, Rank>& shape, float lo, float hi) {
        limits::charge_work(60.0 * elements(shape), "random uniform values");
        Tensor<Rank> t = Tensor<Rank>::from_shape(shape);
        for (auto& x : t) x = uniform(lo, hi);
        return t;
    }

    // A (out, in) weight initialised like PyTorch's nn.Linear: U(-1/sqrt(in), 1/sqrt(in)).
    Tensor2 linear_weight(std::size_t out_features, std::size_t in_features);

private:
    template <std::size_t Rank>
    static double elements(const std::array<std::size_t, Rank>& shape) {
        double n = 1.0;
        for (std::size_t s : shape) n *= double(s);
        return n;
    }

    std::uint64_t state_;
};

}  // namespace headwise
