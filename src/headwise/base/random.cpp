#include "headwise/base/random.hpp"

#include <cmath>

namespace headwise {

std::uint64_t Random::next_u64() {
    // SplitMix64 (Steele, Lea, Flood 2014): a 64-bit counter passed through a bijective mixer.
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

float Random::uniform01() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

float Random::normal() {
    float sum = 0.0f;
    for (int i = 0; i < 12; ++i) sum += uniform01();
    return sum - 6.0f;
}

Tensor2 Random::linear_weight(std::size_t out_features, std::size_t in_features) {
    // sqrt is correctly rounded by IEEE 754, so this bound is the same everywhere.
    const float bound = 1.0f / std::sqrt(static_cast<float>(in_features));
    return uniform<2>({out_features, in_features}, -bound, bound);
}

}  // namespace headwise
