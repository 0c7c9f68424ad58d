// gradekit/text.hpp -- a whole file's text, the one reader the grading tools share.
#pragma once

#include <filesystem>
#include <string>

namespace headwise::gradekit {

// The bytes of `path`; throws std::invalid_argument "cannot read <path>" (headwise-gradetool
// exits 2 on it: a path the caller gave).
std::string read_text(const std::filesystem::path& path);

}  // namespace headwise::gradekit
