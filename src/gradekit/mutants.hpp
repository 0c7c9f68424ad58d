// gradekit/mutants.hpp -- the single-edit variants of a solution, and the one "mutant schemata"
// source that holds them all behind a runtime selector.
//
// From each solution block (// BEGIN SOLUTION .. // STUB) the generator makes the edits a
// learner's slips look like: an index or variable swapped for another in scope of the same type,
// +-1 on a loop bound or an index, < for <= (and back), + for -, * for /, the operands of - or /
// swapped, a constant changed (0, 1, n +- 1, -x, inf for 1e9), std::max for std::min, = for +=
// (and back), a statement dropped. Type changes (float for double) and loop orders are not made:
// the schemata holds every variant in one compiled file, and neither can sit behind a runtime
// selector. Each variant replaces one span of one *region*: a whole expression statement, a
// `return`, or an expression (a declarator's initializer, a loop's or an if's condition).
//
// The schemata is the solution with every region that has variants rewritten as a selection,
// one alternative per line so that a compile error names the variant that caused it:
//     expression:  (HW_M(12) ? (j <= n_k) :
//                   HW_M(13) ? (j < n_k + 1) :
//                   (j < n_k))
//     statement:   if (HW_M(14)) { ; } else
//                  if (HW_M(15)) { sum = weights(b, i, j); } else
//                  { sum += weights(b, i, j); }
// HW_M(id) is true when the selector is `id`; with the selector at -1 (the probe) it records that
// the site was reached and is false: a variant whose site a run never reaches behaves exactly
// like the solution on it.
//
// The variants' data (tests/grade/mutants/<id>.mutants, see read_data) is committed: which ones
// compile, and each one's behaviour on every check of the grader (its fingerprint).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace headwise::gradekit {

struct Variant {
    int id = 0;              // 1, 2, ... in generation order (stable for one solution text)
    std::size_t region = 0;  // index into Mutants::regions
    std::size_t begin = 0;   // the span of the solution text it replaces
    std::size_t end = 0;
    std::string replacement;                 // what replaces it
    std::string kind;                        // "index swap", "bound +1", "< for <=", "statement dropped", ...
    int line = 0;                            // 1-based line of the span in the solution
    std::string original_line, edited_line;  // that line, trimmed, before and after the edit
    std::string context;                     // "in attention, the loop over c"
    // An edit of several regions at once (a learner's file only): each other span in its own region.
    // A move ("statements moved earlier") empties the statements it moves, `line` then the line they
    // move before; a swap ("two values swapped") puts each of two values in the other's place.
    struct Span {
        std::size_t region = 0, begin = 0, end = 0;
        std::string replacement;
    };
    std::vector<Span> also;
    int moved_first = 0, moved_last = 0;  // the lines of the statements moved
    int lines_last = 0;                   // an edit of two lines (two values swapped): the second
};

struct Region {
    std::size_t begin = 0, end = 0;
    bool statement = false;  // an expression statement or return (else: an expression)
    // An initializer of a class (`const Tensor3 h = x + a;`): that class, each alternative converted
    // to it in the schemata, so that `?:` has one type (xtensor's `x + a` and `x - a` are two).
    std::string convert_to{};
};

struct Mutants {
    std::vector<Region> regions;
    std::vector<Variant> variants;
};

// Every variant of `solution` (the text of a solution .cpp).
Mutants generate_mutants(const std::string& solution);

// Every variant of a learner's own file (gradekit/repair.hpp): each function defined in it (at
// namespace scope), lambdas' bodies included, and the edits that only a learner's file gets: an
// int literal that ends a call's arguments made a float (`std::accumulate(a, b, 0.0f)` for `0`);
// an integer twice or half what it is (16 for 32); a value computed and never read put back into
// each operand after it (`std::exp(e - top)` for `std::exp(e)`); the same object's members from
// anywhere in the file (cache.v for cache.k); their `auto` sizes swapped with each other; one of two
// parallel lines made like the other (`dst[j] = d * float(lo) + m` beside `... float(hi) + m`), a
// range-for's written copy made a reference, a divisor or an offset the function uses elsewhere put
// back (`/ double(counted)`, `start + n`), a tile cut at the loop's end (`imin(Bc, stop - s)`), a
// namespace constant nothing reads made a factor, a block's index made its first row
// (`range(part * d, (part + 1) * d)`), a log-sum-exp's shift added back, a count advanced, a tile or
// a vector read for another of its type, a softmax's max or sum put back, a returned sum doubled, a
// count multiplied, a neighbouring call's argument, a while loop one step shorter, `continue;` at the
// end of an if's block in a loop (an empty region); and two edits of several regions (Variant::also): a
// block's last statements moved before the first statement that reads what they write, two values
// of one declaration swapped.
// `structs`: the structs its headers declare (header_structs); a member of one of them may stand
// for another of the same type, where the members the file uses on that object are all its.
struct HeaderStruct {
    std::string name;
    std::vector<std::pair<std::string, std::string>> members;  // (name, type)
};
Mutants generate_own_mutants(const std::string& file, const std::vector<HeaderStruct>& structs = {});

// The data members of each struct a header declares, with their types: BlockQ4_1's
// {d, std::uint16_t}, {m, std::uint16_t}, {qs, std::uint8_t[16]} from
// `struct BlockQ4_1 { std::uint16_t d; std::uint16_t m; std::uint8_t qs[16]; };`.
std::vector<HeaderStruct> header_structs(const std::string& header);

// The schemata: `solution` with the variants whose ids are in `keep` behind HW_M (see above),
// and `lines`: for each line of the result that holds an alternative, the variant's id.
struct Schemata {
    std::string text;
    std::map<int, int> line_to_variant;  // a variant's line of the text -> its id
    std::map<int, int> line_to_source;   // every line of the text -> the solution's line it comes from
    // A guarded region's first line (its own text, the chain's first operand) -> its first
    // alternative's id: a compiler error about the whole chain's type is reported there, and the
    // first alternative is what an unguarded chain would have had at that place.
    std::map<int, int> guard_to_variant;
};
// `guarded`: each region's own text first, taken while no edit of the region is on (HW_R(r), the
// repair's selector) -- one load and branch there, not one per alternative (a kernel's inner loop at
// -O0 tested each of a region's dozens of edits on every pass).
Schemata make_schemata(const std::string& solution, const Mutants& m, const std::vector<int>& keep,
                       bool guarded = false);

// `text` (a schemata) with a call after each declaration of a kernel's __shared__ array
// (`__shared__ shared_tile<float, 16, 64> k_tile; hw_keep_shared(...);`): the selector's prelude
// (schemata.cpp) notes where each one is, and zeroes them all before the next edit a child of the
// grader grades, as a child forked for that edit alone would hold them (the emulator's __shared__
// is `static`). nullopt where a __shared__ is no plain declaration the reader knows (`extern
// __shared__`, one inside a macro): each edit then gets a child of its own.
std::optional<std::string> with_shared_kept(const std::string& text);

// 64-bit FNV-1a, as 16 hex digits: the staleness stamps of the data file.
std::string fnv_hex(const std::string& text);

// tests/grade/mutants/<id>.mutants: a text file, one record a line, fields split by tabs.
//   solution <hash>                   the solution text and the variants made from it
//   cases <hash>                      the grader's case file the fingerprints were taken with
//   check <k> <name>                  the grader's checks, in the order they run
//   variant <id> <status> <fingerprint> <group> <line> <kind> <original line> <edited line> <context>
// status: untested, nocompile, crash (or a sanitizer report, or a time-out), equivalent (passes
// every check), ok. fingerprint: one letter per check, P passed, F failed, T threw ("-" before
// it is taken); group: the first id with exactly the same results (values included).
struct VariantRecord {
    int id = 0;
    std::string status = "untested";
    std::string fingerprint = "-";
    int group = 0;
    int line = 0;
    std::string kind, original_line, edited_line, context;
};
struct MutantData {
    std::string solution_hash, cases_hash;
    std::vector<std::string> checks;
    std::vector<VariantRecord> variants;
};
MutantData read_mutant_data(const std::string& text);
std::string write_mutant_data(const MutantData& d);

// "your code behaves exactly like the solution with `A` in place of `B` (line L, in F, ...)"
std::string describe_edit(const VariantRecord& v);

// Writes `text` to `path` (making its folder) only when the file's content differs: an unchanged
// output keeps its time stamp, and what is built from it is not rebuilt (every gradetool output).
void write_if_changed(const std::string& path, const std::string& text);

// `headwise-gradetool mutants ...` (gradekit/mutants_command.cpp). std::invalid_argument: bad usage.
int mutants_command(const std::vector<std::string>& args);

}  // namespace headwise::gradekit
