// gradekit/unused -- a value the learner's code makes and never reads, where the checks fail.
//
// GCC's -Wunused-variable and -Wunused-but-set-variable name a local that no line reads: a learner
// who computed `const Slot s = slot_of(f, d_head);` and then wrote the element's index out by hand
// (a reshape where a transpose belongs) leaves `s` unread. Where the grade names nothing else (no
// edit, no repair, no transplanted lines, no catalogued mistake), such a warning in a function whose
// own checks fail is the nearest fact to the slip: the grade says it beside the differences, as a
// question, since an unread value may also be a harmless leftover.
#pragma once

#include "gradekit/steps.hpp"

#include <set>
#include <string>
#include <vector>

namespace headwise::gradekit {

// One unread value the compiler warned about: its line of the learner's file and its name.
struct UnreadValue {
    int line = 0;
    std::string name;
};

// The unread values `warnings` (a report's, GCC's text) name in `file` (a path as the compiler
// wrote it, relative or not: its file name is compared). Quotes may be ASCII or typographic.
std::vector<UnreadValue> unread_values(const std::vector<std::string>& warnings, const std::string& file);

// The sentence for `values` of the learner's `text`, each in the function that holds it, kept only
// where that function is the one a failing check names ("split_heads: ..."); empty when none is.
std::string unread_in_failing(const std::string& text, const std::vector<UnreadValue>& values,
                              const std::set<std::string>& failing_checks);

// After a failed run that nothing named, or whose repair mends part of the checks: reads s.report,
// and when a warned-about value sits in a function whose checks (still) fail, writes the sentence as
// its `located` ("Of the checks still failing: ..." beside a repair of part). Returns the sentence,
// or empty.
std::string unread_value_step(const Subject& s);

}  // namespace headwise::gradekit
