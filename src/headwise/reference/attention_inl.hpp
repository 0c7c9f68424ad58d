// Template definitions for attention.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace headwise {

template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
    if (!std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end())) {
        throw std::invalid_argument("max_abs_diff: shapes differ");
    }
    double m = 0.0;
    auto ia = a.begin();
    for (auto ib = b.begin(); ib != b.end(); ++ia, ++ib) {
        const double d = std::abs(static_cast<double>(*ia) - static_cast<double>(*ib));
        if (std::isnan(d)) return d;  // a NaN must never hide behind std::max
        m = std::max(m, d);
    }
    return m;
}

}  // namespace headwise
