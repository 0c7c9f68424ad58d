// Exercise 99 -- a throw-away exercise (tests/course/add_a_lesson.cmake).
#pragma once

#include "exercise.hpp"

namespace headwise::ex99 {

// (B, N, d_model) -> (B, N, d_model): every element times three.
Tensor3 triple(const Tensor3& x);

}  // namespace headwise::ex99
