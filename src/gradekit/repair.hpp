// gradekit/repair.hpp -- the learner's own lines, repaired: their slip named by the edit of *their*
// file that makes the failing checks pass.
//
// The search (tests/grade/search.hpp) and the transplant step compare the learner's code with the
// solution's; a learner who wrote the exercise their own way (helpers, lambdas, std algorithms)
// differs from it everywhere. This step asks their file alone. The mutation operators that make the
// solution's variants (gradekit/mutants.hpp) are applied to the learner's file: each is one small
// edit of one of their lines (< for <=, min for max, one variable for another, a constant, an int
// start value made a float, a statement dropped...). All of them go into one schemata -- the
// learner's file with every edit behind a selector, compiled and linked once as the grader was
// (rebuild.hpp; an edit that does not compile is dropped and the file compiled again) -- and
// each edit the failing checks reach is run on those checks. An edit that makes some of them pass
// is then run on every check: it is a repair when it breaks none that passed.
//
//   found by repairing your code: with `const float total = std::accumulate(first, last, 0.0f);`
//   in place of your line 16 (`const float total = std::accumulate(first, last, 0);`, in
//   softmax_row), every check passes
//
// With two slips no one edit repairs everything: the edit that repairs the most (breaking nothing)
// is kept on, and every other edit screened on what still fails; two that together pass every
// check are named each with the checks it repairs ("..., the 3 failing checks of softmax_last_axis
// pass; with that and `...` in place of your line 35 (...), the other 3 failing checks pass too:
// every check passes"). Only what passes every check is said -- an edit that repairs part may
// hide the slip rather than undo it. It never writes under exercises/.
//
// A repair of everything may have company: a slip where a value is made and where it is used
// (`s / scale` for `s * scale`) is undone at either line, so the other lines' repairs are named too
// ("; so does `...` in place of your line 52").
//
// Two slips that fail the same checks, where one edit takes the run further into the first failing
// check (more of its assertions pass before it stops: the weights right, the output still wrong),
// are found by keeping that edit on while every other is screened (advancing_pair).
//
// A repair of part with nothing found for the rest (a line or a term missing, which no edit of
// their lines puts back) is still said, with what still fails -- the learner has one slip's place
// and knows another is left -- unless a catalogued mistake explains every check, or it repairs one
// check of three or more (a small case, easily passed by an edit that hides the slip). The
// transplant step then still runs, and what it finds to explain every check replaces it (the shift
// dropped from the one exp() that had it passes all but the large scores, where the other lacked it).
//
// Two slips that fail the same checks leave no edit that repairs any of them alone. Then pairs of
// the edits those checks reach are tried together: each edit ranked by what its own run changed
// (rank_edit_pairs), pairs on two lines taken in the order of their ranks, at most a few hundred,
// each graded as one more child of the grader; a pair that passes every check (with fresh memory
// too) names both lines. Nothing is said when nothing repairs: the step names only what it has
// reproduced.
//
// A fill left out (their `+=` into memory nothing sets) is no edit either: beside another slip, the
// failing checks are run again with fresh memory zeroed -- what the fill would have done -- and the
// other slip is repaired there, named after the fill's lines ("...; with that memory zeroed, with
// `...` in place of your line 46 (...), every check passes").
//
// The schemata and its compile are schemata.hpp's; `headwise grade` begins that compile before it
// builds the grader (SchemataInAdvance), and this step takes it.
#pragma once

#include "gradekit/mutants.hpp"
#include "gradekit/steps.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headwise::gradekit {

class SchemataInAdvance;

struct RepairSetup {
    fs::path build_dir;          // a Ninja build directory holding the grader's target
    std::string target;          // headwise_grade_ex05
    int jobs = 2;                // edits run at once
    int budget_s = 30;           // from the step's start: the edits not run by then are not tried
    double slowest_probe_s = 5;  // failing checks slower than this (the learner's code on them): no repair
    // The schemata's compiles, in all: past it, no repair. Two refusing compiles beside the
    // grader's build and run took exercise 6's kernels to 7 s, and the clean one takes 6 s more.
    int slowest_compile_s = 16;
    int confirm_floor_s = 20;     // a repair's run on every check may take this long, however quick the failing ones
    std::size_t max_pairs = 300;  // pairs tried together, per group of failing checks: a few seconds
    // The pair search, last and costliest, within the budget: a grade with nothing to repair (most
    // of them) would otherwise wait out the whole budget (it took ex08's and ex11's from ~15 to ~32 s).
    int pair_budget_s = 15;
    // A group with more screened edits is not searched for pairs (each is run alone first: ex04's 642
    // edits, 11 s).
    std::size_t max_paired_edits = 400;
};

// One edit's run on every check of a group of failing checks (or the learner's own run, nothing
// switched on), as the pair search ranks it.
struct ScreenedEdit {
    int id = 0;
    std::size_t region = 0;  // Variant::region and ::line: two edits of one region exclude each other
    int line = 0;
    std::map<std::string, std::string> failures;  // each failing check -> its message and details
};

// The pairs of `edits` worth trying together (ids, the lower line first), the most promising first,
// at most `cap`. Each edit is ranked by what its run changed against `theirs`: first the edits that
// pass some of the failing checks (the most first), then those with fewer values differing in all
// (the grader's "k of n values differ"; the fewest first), then those that change some failure (the
// most first), last those that change none. An edit that passes some checks alone undoes a slip
// (as first_slip reasons) and is paired with every other edit: the other slip's repair may change
// nothing the checks see while the first slip is there (a wrong index read after weights already
// wrong). Only when no edit passes a check alone are two that pass none paired, and only when the
// better of the two leaves fewer values differing, in the order of the sum of their places (the first
// with the second, with the third, then the first with the fourth and the second with the third,
// ...): two edits can also make up for each other on correct lines, easily where the checks compare
// a few counts (d_head = d_model, and `heads *` dropped) and hardly where they compare tensors. Two
// edits pair only on different lines and regions; an edit that crashed is not in `edits`.
std::vector<std::pair<int, int>> rank_edit_pairs(const ScreenedEdit& theirs, std::vector<ScreenedEdit> edits,
                                                 std::size_t cap);

// How strongly the learner's own file points at an edit, lower first, or -1 for none: an edit made
// from something their code shows -- a line written unlike its twin, a copy written in a range-for,
// a divisor or an offset the function uses elsewhere, a constant or a member never read, a range
// `(part, part + d)` of a block's index, a log of exps without their shift, a count read and never
// advanced -- 0; a value
// they computed and never read put back at the end of a statement's value (`scores[j] = s *
// inv_sqrt_d`), 1; put back anywhere else, 2. The repair pairs these few with each other before the
// blind pair search (two slips on the same checks, each one's trace in the file).
int evidence_rank(const Variant& v);

// The learner's lines that add (`+=`) into elements of something their file never sets -- no
// element assigned, no fill, no zeros, no std::vector -- each as "your line 72 (`...`, in attend)
// adds to `oh`" (its place's words from `variants` of that line): where the memory the grader
// found added in (its "added (+=) to elements never set") comes in.
// `made_only`: only those it makes with from_shape (or xt::empty) in the same function, then said
// ("adds to `ctx`, made with from_shape on your line 50"): unset whatever the checks show.
std::vector<std::string> never_cleared(const std::string& text, const std::vector<Variant>& variants,
                                       bool made_only = false);

// "your line 72 (`for (...) oh[c] += ...;`, in attend, the loop over c)": a line of the learner's
// file, trimmed, with its place's words from the edits made on it.
std::string your_line(int number, const std::string& line, const std::vector<Variant>& variants);

// The line of the learner's file that makes `name` with from_shape (or xt::empty) when the file
// never fills it -- no fill, no zeros -- as "your line 37 (`...`, in masked_attention) makes
// `weights` without filling it"; nullopt when there is no such line, or two. The grader's "elements
// read or returned before they were ever written" in `name` then has its place.
std::optional<std::string> never_filled(const std::string& text, const std::string& name,
                                        const std::vector<Variant>& variants);

// Whether a learner's file keeps state between calls: a `static` or `thread_local` variable that is
// not const (a function-scope scratch buffer, a counter). Its edits are then graded each in a fresh
// child of the grader: graded one after another in one child, what one edit left there would be
// the next one's start.
bool holds_mutable_statics(const std::string& text);

// Whether a learner's file writes memory through something no bound check watches: a raw pointer
// (`float* row = ...`, `.data()`, `&x(i, 0)`), memcpy or memset, a std algorithm's output iterator.
// Built without the sanitizers (exercise 7's schemata), such a file's edits are graded each in a
// fresh child, since a stray write of one edit could change the next one's run; a file that indexes
// only xtensor's containers (bound-checked there) and std::vector's (_GLIBCXX_ASSERTIONS) grades
// its edits one after another in one child.
bool writes_raw_memory(const std::string& text);

// The structs (header_structs) a learner's file sees through its quoted includes, two levels deep,
// each looked up beside the file, in src/, in exercises/common and at the top of the repository,
// and the file's own.
std::vector<HeaderStruct> included_structs(const fs::path& file, const fs::path& source_dir);

// After a failed run (s.report written by run_step): writes what it found into the report's
// "repaired" sentence. `progress` (may be empty) hears one line now and then. Returns the
// sentence (empty: nothing repaired, or nothing to try).
// `begun` (may be null): the schemata's compile begun before the grader was built (schemata.hpp),
// taken when made for the file as it is.
std::string repair_step(const Subject& s, const RepairSetup& t, const std::function<void(const std::string&)>& progress,
                        SchemataInAdvance* begun = nullptr);

}  // namespace headwise::gradekit
