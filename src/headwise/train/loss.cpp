#include "headwise/train/loss.hpp"

#include <algorithm>
#include <cmath>

namespace headwise::train {

double cross_entropy(std::span<const float> logits, std::size_t V, std::span<const std::int32_t> targets,
                     std::span<float> dlogits) {
    const std::size_t rows = targets.size();
    std::size_t count = 0;
    for (std::int32_t t : targets) count += t >= 0;
    double total = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* z = logits.data() + r * V;
        if (targets[r] < 0) {
            if (!dlogits.empty()) std::fill_n(dlogits.data() + r * V, V, 0.0f);
            continue;
        }
        const float m = *std::max_element(z, z + V);  // softmax is shift-invariant: exp never overflows
        float* g = dlogits.empty() ? nullptr : dlogits.data() + r * V;
        double sum = 0.0;
        for (std::size_t j = 0; j < V; ++j) {
            const float e = std::exp(z[j] - m);  // each exp once: kept in g for the gradient
            sum += e;
            if (g != nullptr) g[j] = e;
        }
        total += std::log(sum) + m - z[targets[r]];
        if (g == nullptr) continue;
        const float to_probability_over_count = float(1.0 / (sum * double(count)));
        for (std::size_t j = 0; j < V; ++j) g[j] *= to_probability_over_count;
        g[targets[r]] -= 1.0f / float(count);
    }
    return count ? total / double(count) : 0.0;
}

}  // namespace headwise::train
