// tests/cuda/tolerance.hpp -- how close a kernel must come to the double-precision reference:
// fp32's tolerance and the tensor-core kernels' derived bounds, which live beside the kernels
// (kernels/tolerance.hpp; the lesson states them too).
#pragma once

#include "kernels/tolerance.hpp"

namespace headwise::test {

using kernels::excess_error;
using kernels::excess_error_16_bit;
using kernels::RowLayout;

}  // namespace headwise::test
