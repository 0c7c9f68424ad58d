// headwise/lesson.hpp -- everything a lesson file includes, in one line.
#pragma once

#include "headwise/attention.hpp"
#include "headwise/cli.hpp"
#include "headwise/random.hpp"
#include "headwise/softmax.hpp"
#include "headwise/tensor.hpp"
#include "headwise/trace.hpp"

#include <fmt/format.h>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>
