// tests/kernel_cases.hpp -- random attention problems for the kernel tests, forward and backward.
#pragma once

#include "kernels/attention_kernels.hpp"

#include "headwise/base/random.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace headwise::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool sanitized = true;  // AddressSanitizer: the emulator runs many times slower
#else
inline constexpr bool sanitized = false;
#endif

// q, k, v and d_out (B, H, N, d_head) with N(0, 1) entries (d_out, the gradient arriving at the
// output, drawn last: q, k, v do not depend on it), and key_len (B), every key real.
struct Case {
    kernels::Problem p;
    Tensor4 q, k, v, d_out;
    std::vector<int> key_len;
};

inline Case make_case(int batch, int heads, int seq, int d_head, bool causal, std::uint64_t seed = 1) {
    Random rng(seed);
    Case c;
    c.p.batch = batch, c.p.heads = heads, c.p.seq = seq, c.p.d_head = d_head, c.p.causal = causal;
    const std::array<std::size_t, 4> shape{std::size_t(batch), std::size_t(heads), std::size_t(seq),
                                           std::size_t(d_head)};
    c.q = rng.normal<4>(shape);
    c.k = rng.normal<4>(shape);
    c.v = rng.normal<4>(shape);
    c.d_out = rng.normal<4>(shape);
    c.key_len.assign(std::size_t(batch), seq);
    return c;
}

}  // namespace headwise::test
