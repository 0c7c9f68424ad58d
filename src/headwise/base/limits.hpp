// headwise/base/limits.hpp -- how big a run may get, computed from what each library step will do.
//
// A lesson is for looking at shapes and numbers; a learner's typo (an extra zero in --seq) must
// end in one line that says so, not in a machine that swaps or a program that looks hung. No
// lesson counts its own tensors for that: each library step charges its operations here *before*
// it computes (linear: 2 * rows * in * out, attention: 4 * B * H * N_q * N_k * d_head, ...), and
// the lesson runtime (lesson.hpp) charges every allocation before it happens. When a charge
// would pass the limit, the step throws limits::exceeded (a usage_error: one line, exit code 2).
//
// Outside a lesson (attend, tests, benchmarks) nothing is limited: the charges are counted only.
#pragma once

#include "headwise/base/tensor.hpp"

#include <string_view>

namespace headwise::limits {

struct exceeded : usage_error {
    using usage_error::usage_error;
};

// Called by a library step before it computes `flops` floating-point operations (about: a
// multiply-add is 2, an exp about 20). Throws `exceeded` when the run's total would pass the
// work limit, naming `step`.
void charge_work(double flops, std::string_view step);

// The operations charged so far in this process.
double work_charged();

// Sets the work limit (default: none). The lesson runtime sets about a few seconds' worth.
void set_work_limit(double flops, std::string_view who);

}  // namespace headwise::limits
