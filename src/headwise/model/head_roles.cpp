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

std::string role(const Tensor2& w, std::size_t n, std::string_view first, std::string_view last) {
    struct Candidate {
        std::string name;
        double value, cut;
    };
    const Candidate candidates[] = {
        {"previous-token", previous_token(w, n), 0.5},
        {"next-token", next_token(w, n), 0.5},
        {fmt::format("{} sink", first), share_on(w, n, 0), 0.6},
        {fmt::format("{} sink", last), share_on(w, n, n - 1), 0.6},
    };
    const Candidate* best = nullptr;
    for (const Candidate& c : candidates)
        if (c.value > c.cut && (!best || c.value > best->value)) best = &c;
    if (best) return best->name;
    if (n < 2) return "sharp";  // one key: every row is certain
    const double relative = mean_entropy(w, n) / std::log(static_cast<double>(n));
    return relative < 0.3 ? "sharp" : relative > 0.85 ? "broad" : "mixed";
}

}  // namespace headwise::roles
