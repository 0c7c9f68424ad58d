// gradekit/sanitizer.hpp -- a crashed grader's output read as facts, and the facts said in the
// learner's terms. The run step (steps.hpp) hands a grader's output here when it did not finish:
//
//   read_crash       AddressSanitizer's or UBSan's report (and the grader's own markers) -> CrashFacts:
//                    the kind of error, the access, the buffer it missed, the learner's line there.
//   crash_sentence   CrashFacts -> what happened, as one sentence, and the lesson to reread. Each
//                    clause is a fact of the report or of the learner's line, printed where it holds:
//                    "an empty range" only where the line dereferences one (max_element, front(), ...)
//                    and the address is the null data() of an empty std::vector.
#pragma once

#include "gradekit/steps.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headwise::gradekit {

enum class Access { unknown, read, write };

// Where the address lies against the buffer the sanitizer names ("0 bytes to the right of
// 1600-byte region").
enum class Side { none, right, left, inside };

struct CrashFacts {
    std::string kind;  // AddressSanitizer's word: "heap-buffer-overflow", "SEGV", "attempting" (double free)...
    std::string ub;    // UBSan's runtime error, what follows "runtime error: "
    Access access = Access::unknown;
    long size = -1;                        // bytes accessed (-1: not said)
    std::optional<std::uint64_t> address;  // a SEGV's address, when printed
    bool zero_page = false;                // a SEGV's address just above 0 (a null pointer or reference)
    bool high_address = false;             // a SEGV's address near the top (just below 0: null - 1)
    Side side = Side::none;
    long offset = 0;           // bytes between the address and the buffer
    long region = -1;          // the buffer's bytes (-1: not said)
    std::string top_function;  // frame #0 of the error: "__interceptor_memcpy" in a copy
    std::string where_file;    // the subject's file, relative to the repository
    int where_line = 0, where_col = 0;
    std::string where_source;               // the subject's line there, without its indentation
    std::vector<std::string> vector_names;  // names that file declares as a std::vector
    std::vector<std::string> lines_before;  // that file's lines before where_line (where an empty range came from)
    std::string test, check;                // the grader's test and check that were running
    std::string terminate_what;             // an escaped exception's what()
    bool in_kernel = false;                 // a frame of the emulator's: inside a kernel (exercise 06)
};

// The facts of a grader's output lines (a subject's paths as `s` names them).
CrashFacts read_crash(const std::vector<std::string>& lines, const Subject& s);

struct CrashSentence {
    std::string what;    // "read 4 bytes just past the end of a 1600-byte buffer (400 floats): ..."
    std::string lesson;  // the docs to reread, or empty
};

// How a dereference of an empty range shows on the learner's line: the expression and what it
// does on an empty range; nothing when the line dereferences none of them or the address is not a
// null data()'s (exposed for tests).
struct EmptyRangeRead {
    std::string expression;  // "*std::max_element(w.begin(), w.end())"
    std::string sentence;    // "read through the end of an empty range (`...`): ... had no elements"
};
std::optional<EmptyRangeRead> empty_range_read(const CrashFacts& c);

// Where the empty std::vector `name`, read on the line after `lines_before`, got its size, from the
// learner's own lines: "`p` is made with `n` elements on your line 44 (`std::vector<float> p(n);`),
// so `n` was 0 there -- your line 40 (`const std::size_t n = cache.length;`) sets it", or "`w` is
// filled only by your line 30 (`w.push_back(x);`), which had not run". Empty when the lines between
// change it in other ways (a resize, a clear, an assignment) or say nothing.
std::string empty_range_origin(const std::vector<std::string>& lines_before, const std::string& name);

// What happened: a sanitizer's report, else a time limit, an abort, an escaped exception, UBSan,
// a signal or an early exit. `exit_code`: the grader's (128 + signal when killed).
CrashSentence crash_sentence(const CrashFacts& c, int exit_code, bool timed_out);

}  // namespace headwise::gradekit
