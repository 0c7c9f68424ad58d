// gradekit/mistake.hpp -- the one .mistake format and its one parser.
//
// Every known-wrong answer of an exercise's grading is a .mistake file in tests/grade/exNN/
// (mistakes/ the catalogue, learner/ the learner-style cases, search/ the search's hand-written
// edits, located/ the cases the steps after a failed grade must locate): a few edits of the
// solution's .cpp, one line for one line (line numbers stay the solution's), and what grading it
// must say. One "key: value" a line; '#' starts a comment line.
//
//   mistake: <name>            a catalogued mistake's name (no ; " or \), with
//   why: <line>                the two lines the report prints when a learner's numbers match it
//   fix: <line>
//   own: <file>                the edits are made in this file (beside the .mistake) instead of the
//                              solution: a learner's own implementation, their slip made in it
//   replace: <text>            text of the solution found exactly once ("replace#N:": its N-th
//   with: <text>               occurrence), replaced by the "with:" line that follows
//   expect: <regex>            some failure's message matches it
//   expect-where: <line>       some failure is located at that line of the patched file
//   expect-part: <name> <passed>/<total>   the report's milestone <name> ("part 1")
//   expect-first: <regex>      the first failure's message matches it
//   expect-shown: <regex>      what `headwise grade N` prints (whitespace collapsed) matches it
//   expect-lesson: <regex>     some failure's lesson link matches it
//   expect-not: <regex>        no message, lesson, detail, nor what `headwise grade N -v` prints
//   expect-fresh: <regex>      the fresh-memory step says it (gradekit/fresh_memory.hpp)
//   expect-located: <regex>    the transplant step says it (gradekit/transplant.hpp)
//   expect-search-edit: <regex>  the search names this edit, which the transplant step drops
//   expect-repaired: <regex>   the repair step says it (gradekit/repair.hpp)
//
// The regexes are CMake's (what the files were first written for): '.' matches any character,
// a newline too; the texts they match are the report's lines joined by newlines.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace headwise::gradekit {

struct MistakeEdit {
    std::string from;    // the solution's text
    std::string to;      // what replaces it
    int occurrence = 0;  // 0: the text occurs exactly once; N: its N-th occurrence
    int line = 0;        // the "replace:" line in the .mistake file
};

struct Expectation {
    std::string key;    // "expect", "expect-where", ...
    std::string value;  // what follows "key: "
    int line = 0;
};

struct Mistake {
    std::string path;            // for messages
    std::string name, why, fix;  // a catalogued mistake's, else empty
    std::string own;             // "own:": the file the edits are made in, beside the .mistake (else the solution)
    std::vector<MistakeEdit> edits;
    std::vector<Expectation> expectations;

    bool catalogued() const { return !name.empty(); }
    std::vector<std::string> expected(const std::string& key) const;  // the values of one key, in order
};

// Throws std::invalid_argument "<path>:<line>: <what is wrong>" for a line of no known key, a
// "with:" without its "replace:", a catalogued mistake without each of mistake/why/fix once, or a
// file with no edit.
Mistake parse_mistake(const std::string& text, const std::string& path);
Mistake read_mistake(const std::filesystem::path& path);

// The solution (or the mistake's own file) with the mistake's edits made; throws
// std::invalid_argument when a text to replace does not occur as said ("<mistake path>:<line>: ...").
std::string apply_mistake(const Mistake& m, std::string solution, const std::string& solution_path);

// A CMake regex as an ECMAScript one: '.' outside brackets matches a newline too, and a brace is
// a brace (CMake has no {m,n} repeats).
std::string ecmascript_from_cmake(const std::string& pattern);

}  // namespace headwise::gradekit
