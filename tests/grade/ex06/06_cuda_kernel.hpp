// tests/grade/06_cuda_kernel.hpp -- exercise 06 as the grader sees it: a table of its functions.
#pragma once

#include "attention_kernels.hpp"
#include "registry.hpp"

namespace headwise::grade {

struct Ex06 {
    Tensor4 (*online)(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, emulator::Schedule schedule);
    Tensor4 (*tiled)(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, emulator::Schedule schedule);
    Tensor2 (*warp_reduce)(const Tensor2& x, bool maximum, emulator::Schedule schedule);
};

}  // namespace headwise::grade

namespace {
// The functions of namespace headwise::ex06: the subject's, or, in the catalogue's build, a
// mistake's (there `ex06` is a macro naming the mistake's own namespace).
[[maybe_unused]] headwise::grade::Ex06 bind_ex06() {
    return {&headwise::ex06::online_attention, &headwise::ex06::tiled_attention, &headwise::ex06::warp_reduce};
}
}  // namespace
