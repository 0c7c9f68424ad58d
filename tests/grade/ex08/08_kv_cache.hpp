// tests/grade/08_kv_cache.hpp -- exercise 08 as the grader sees it: a table of its functions.
#pragma once

#include "kv_cache.hpp"
#include "registry.hpp"

namespace headwise::grade {

struct Ex08 {
    Tensor4 (*decode_step)(decoding::Cache& cache, const Tensor3& tokens, const decoding::Project& project);
};

}  // namespace headwise::grade

namespace {
// The functions of namespace headwise::ex08 (in the catalogue's build, a mistake's).
[[maybe_unused]] headwise::grade::Ex08 bind_ex08() { return {&headwise::ex08::decode_step}; }
}  // namespace
