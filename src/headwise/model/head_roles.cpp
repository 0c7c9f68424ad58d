#include "headwise/model/head_roles.hpp"

#include <fmt/format.h>

#include <cmath>

namespace headwise::roles {

namespace {

void check(const Tensor2& w, std::size_t n) {
    if (w.shape()[0] != w.shape()[1] || n == 0 || n > w.shape()[0]) {
        throw usage_error(
            fmt::format("head roles: weights ({}, {}) with {} real tokens: need a square matrix and 1..N tokens",
                        w.shape()[0], w.shape()[1], n));
    }
}

}  // namespace

double previous_token(const Tensor2& w, std::size_t n) {
    check(w, n);
    if (n < 2) return 0.0;
    double s = 0.0;
    for (std::size_t i = 1; i < n; ++i) s += w(i, i - 1);
    return s / static_cast<double>(n - 1);
}

double next_token(const Tensor2& w, std::size_t n) {
    check(w, n);
    if (n < 2) return 0.0;
    double s = 0.0;
    for (std::size_t i = 0; i + 1 < n; ++i) s += w(i, i + 1);
    return s / static_cast<double>(n - 1);
}

double share_on(const Tensor2& w, std::size_t n, std::size_t key) {
    check(w, n);
    if (key >= n) throw usage_error(fmt::format("head roles: key {} is not one of the {} real tokens", key, n));
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += w(i, key);
    return s / static_cast<double>(n);
}

double mean_entropy(const Tensor2& w, std::size_t n) {
    check(w, n);
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        double e = 0.0;
        for (std::size_t j = 0; j < n; ++j) {
            const double p = w(i, j);
            if (p > 0.0) e -= p * std::log(p);
        }
        total += e;
    }
    return total / static_cast<double>(n);
}

}  // namespace headwise::roles
