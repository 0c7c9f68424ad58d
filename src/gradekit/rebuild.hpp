// gradekit/rebuild.hpp -- a grader rebuilt out of the tree with another file in place of the
// learner's: the transplant step's copies (transplant.hpp) and the repair step's schemata
// (repair.hpp) are compiled and linked exactly as ninja built the grader, with ninja's own commands.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace headwise::gradekit {

// How ninja builds a grader: the compile command of the learner's file and the final link.
struct Recipe {
    std::string compile, link, object, executable;
};
std::optional<Recipe> recipe_of(const std::filesystem::path& build_dir, const std::string& target,
                                const std::filesystem::path& source);

// Compiles `variant` in place of `source` and links it as `executable`, in the build directory.
// `log` (may be null) receives the compiler's and linker's output; a build still running after
// `timeout_s` seconds (0: none) is stopped, and fails.
bool build_variant(const std::filesystem::path& build_dir, const Recipe& r, const std::filesystem::path& source,
                   const std::filesystem::path& variant, const std::filesystem::path& executable,
                   std::string* log = nullptr, int timeout_s = 0);

}  // namespace headwise::gradekit
