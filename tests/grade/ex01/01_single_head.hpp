// tests/grade/01_single_head.hpp -- exercise 01 as the grader sees it: a table of its functions.
#pragma once

#include "registry.hpp"
#include "single_head.hpp"

namespace headwise::grade {

struct Ex01 {
    Tensor3 (*softmax_last_axis)(const Tensor3& scores);
    Tensor3 (*attention)(const Tensor3& q, const Tensor3& k, const Tensor3& v, Tensor3* weights);
};

}  // namespace headwise::grade

namespace {
// The functions of namespace headwise::ex01: the subject's, or, in the catalogue's build, a
// mistake's (there `ex01` is a macro naming the mistake's own namespace).
[[maybe_unused]] headwise::grade::Ex01 bind_ex01() {
    return {&headwise::ex01::softmax_last_axis, &headwise::ex01::attention};
}
}  // namespace
