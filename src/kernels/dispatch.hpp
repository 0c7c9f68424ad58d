// kernels/dispatch.hpp -- from a run-time d_head to the compile-time D of a kernel template.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

namespace headwise::kernels {

// The head sizes a kernel template is compiled for: all five, or those HEADWISE_KERNELS_D_HEADS
// lists (-DHEADWISE_KERNELS_D_HEADS=8,64,128: the repair step's schemata of exercise 6, course.json,
// compiles each of its ~1000 edits only for the sizes its grader runs).
template <int D>
constexpr bool compiled_d_head() {
#ifdef HEADWISE_KERNELS_D_HEADS
    for (const int d : {HEADWISE_KERNELS_D_HEADS})
        if (d == D) return true;
    return false;
#else
    return true;
#endif
}

// Calls f(std::integral_constant<int, D>{}) for D == d_head, one of the compiled head sizes.
template <class F>
decltype(auto) with_d_head(int d_head, F&& f) {
    switch (d_head) {
        case 8:
            if constexpr (compiled_d_head<8>()) return f(std::integral_constant<int, 8>{});
            break;
        case 16:
            if constexpr (compiled_d_head<16>()) return f(std::integral_constant<int, 16>{});
            break;
        case 32:
            if constexpr (compiled_d_head<32>()) return f(std::integral_constant<int, 32>{});
            break;
        case 64:
            if constexpr (compiled_d_head<64>()) return f(std::integral_constant<int, 64>{});
            break;
        case 128:
            if constexpr (compiled_d_head<128>()) return f(std::integral_constant<int, 128>{});
            break;
        default:
            break;
    }
    throw std::invalid_argument("d_head " + std::to_string(d_head) + " has no compiled kernel (8, 16, 32, 64 or 128)");
}

}  // namespace headwise::kernels
