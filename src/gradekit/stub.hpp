// gradekit/stub.hpp -- the one stub generator: a solution file -> the stub a learner starts from.
//
// In a solution file the learner's part is marked with three full-line comments:
//
//     // BEGIN SOLUTION
//     ...reference code...
//     // STUB
//     // TODO(ex01): what to compute, and where in the lesson to look
//     headwise::not_implemented_yet();
//     // END SOLUTION
//
// The stub keeps what is outside the blocks verbatim and replaces each block by its STUB part;
// the reader's view of the solution keeps the reference code and drops the STUB parts. Marker
// lines never appear in either. A file without markers (a header) is the same in all three.
// Used by the build (the pristine stubs the meta-tests grade), `headwise reset/list/solution`,
// and the check that the committed exercises/ are up to date (`headwise-gradetool stub`).
#pragma once

#include <stdexcept>
#include <string>

namespace headwise::gradekit {

struct SplitSolution {
    std::string stub;      // what exercises/ holds
    std::string solution;  // the reference as a reader wants it: no markers, no STUB parts
};

// Splits `text`; `name` only labels errors. Throws std::runtime_error("<name>:<line>: ...") on a
// block that is nested, never closed, or has END without STUB.
SplitSolution split_solution(const std::string& text, const std::string& name);

}  // namespace headwise::gradekit
