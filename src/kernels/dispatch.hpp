// kernels/dispatch.hpp -- from a run-time d_head to the compile-time D of a kernel template.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

namespace headwise::kernels {

// Calls f(std::integral_constant<int, D>{}) for D == d_head, one of compiled_d_heads.
template <class F>
decltype(auto) with_d_head(int d_head, F&& f) {
    switch (d_head) {
        case 8:
            return f(std::integral_constant<int, 8>{});
        case 16:
            return f(std::integral_constant<int, 16>{});
        case 32:
            return f(std::integral_constant<int, 32>{});
        case 64:
            return f(std::integral_constant<int, 64>{});
        case 128:
            return f(std::integral_constant<int, 128>{});
        default:
            break;
    }
    throw std::invalid_argument("d_head " + std::to_string(d_head) + " has no compiled kernel (8, 16, 32, 64 or 128)");
}

}  // namespace headwise::kernels
