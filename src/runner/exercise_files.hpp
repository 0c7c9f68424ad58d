// runner/exercise_files.hpp -- an exercise's three versions of each file, and safe file writes.
//
//   the learner's      exercises/<dir>/<file>       edited by the learner; never overwritten
//                                                   without a backup (see cmd_reset.cpp)
//   the solution       solutions/<dir>/<file>       with // BEGIN SOLUTION / // STUB /
//                                                   // END SOLUTION blocks
//   the pristine stub  made from the solution by gradekit/stub.hpp (the one stub generator:
//                      the build and the grader's meta-tests use it too), never read from exercises/
#pragma once

#include "common.hpp"

#include <map>
#include <optional>
#include <string>

namespace headwise::runner {

fs::path learner_path(const Exercise& e, const std::string& file);
fs::path solution_path(const Exercise& e, const std::string& file);

// The file's bytes, or nullopt when it does not exist; throws when it exists but cannot be read.
std::optional<std::string> read_file(const fs::path& p);

// The pristine stub of every file of `e` (file name -> content). Throws when a solution is
// missing or its markers are broken.
std::map<std::string, std::string> pristine_stubs(const Exercise& e);

// True when every learner file exists and equals its pristine stub.
bool is_pristine(const Exercise& e, const std::map<std::string, std::string>& stubs);

// A solution file as a reader wants it: the marker lines and the STUB parts removed.
std::string solution_view(const std::string& solution_text);

// Writes `bytes` to `target` atomically: a temporary file in the same directory, flushed to
// disk, then renamed over the target (a crash leaves the old or the new file, never half).
void write_atomically(const fs::path& target, const std::string& bytes);

}  // namespace headwise::runner
