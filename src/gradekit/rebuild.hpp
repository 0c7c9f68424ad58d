// gradekit/rebuild.hpp -- a grader rebuilt out of the tree with another file in place of the
// learner's: the transplant step's copies (transplant.hpp) and the repair step's schemata
// (repair.hpp) are compiled and linked exactly as ninja built the grader, with ninja's own commands.
#pragma once

#include <atomic>
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

// How build_variant builds: which of its two steps, for how long, and what it says.
struct BuildOptions {
    enum class Steps { both, compile, link } steps = Steps::both;  // link: the object compile made
    std::string* log = nullptr;         // receives the compiler's and linker's output (may be null)
    int timeout_s = 0;                  // a build still running after it (0: none) is stopped, and fails
    std::atomic<int>* child = nullptr;  // the running command's process group (run_captured), to stop it
};

// Compiles `variant` in place of `source` (into `variant`.o) and links it as `executable`, in the
// build directory.
bool build_variant(const std::filesystem::path& build_dir, const Recipe& r, const std::filesystem::path& source,
                   const std::filesystem::path& variant, const std::filesystem::path& executable,
                   const BuildOptions& o = {});

}  // namespace headwise::gradekit
