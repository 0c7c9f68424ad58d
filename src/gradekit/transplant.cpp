// gradekit/transplant.cpp -- see transplant.hpp.
#include "gradekit/transplant.hpp"

#include "gradekit/rebuild.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace headwise::gradekit {

namespace {

// A line without its // comment (a // inside a string literal stays), and without its
// whitespace unless `keep_spaces`.
std::string code_of(const std::string& line, bool keep_spaces) {
    std::string out;
    char quote = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quote == 0 && c == '/' && i + 1 < line.size() && line[i + 1] == '/') break;
        if (quote != 0 && c == '\\' && i + 1 < line.size()) {
            out += c;
            out += line[++i];
            continue;
        }
        if (c == '"' || c == '\'') quote = quote == 0 ? c : (quote == c ? 0 : quote);
        if (keep_spaces || quote != 0 || (c != ' ' && c != '\t' && c != '\r')) out += c;
    }
    return out;
}

// A line as compared: no // comment, no whitespace (formatting is not a difference).
std::string normalized(const std::string& line) { return code_of(line, false); }

// The lines that say something, with their 0-based index in the file and their indentation.
struct Significant {
    std::vector<std::string> text;
    std::vector<int> index;
    std::vector<std::string> indent;
};
Significant significant(const std::vector<std::string>& lines) {
    Significant s;
    for (std::size_t i = 0; i < lines.size(); ++i)
        if (std::string n = normalized(lines[i]); !n.empty()) {
            s.text.push_back(std::move(n));
            s.index.push_back(static_cast<int>(i));
            s.indent.push_back(lines[i].substr(0, lines[i].find_first_not_of(" \t")));
        }
    return s;
}

// The best alignment's score, table[i][j] for a's suffix from i and b's from j: the most lines
// matched first (formatting aside), then, among alignments matching as many, the most matched at
// the same indentation -- so that of three closing braces the one a learner added is the one
// left over, not its neighbour.
struct Scores {
    static constexpr std::int64_t per_match = std::int64_t{1} << 24;
    std::vector<std::vector<std::int64_t>> table;
    std::int64_t match(const Significant& a, const Significant& b, std::size_t i, std::size_t j) const {
        return per_match + (a.indent[i] == b.indent[j] ? 1 : 0);
    }
};
Scores alignment_scores(const Significant& a, const Significant& b) {
    Scores s;
    s.table.assign(a.text.size() + 1, std::vector<std::int64_t>(b.text.size() + 1, 0));
    auto& t = s.table;
    for (std::size_t i = a.text.size(); i-- > 0;)
        for (std::size_t j = b.text.size(); j-- > 0;) {
            t[i][j] = std::max(t[i + 1][j], t[i][j + 1]);
            if (a.text[i] == b.text[j]) t[i][j] = std::max(t[i][j], t[i + 1][j + 1] + s.match(a, b, i, j));
        }
    return s;
}

std::vector<std::string> lines_of_file(const fs::path& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

bool write_lines(const fs::path& path, const std::vector<std::string>& lines) {
    std::ofstream out(path, std::ios::trunc);
    for (const auto& line : lines) out << line << '\n';
    return static_cast<bool>(out);
}

// One try: what the grader says of the learner's file with `h` put back.
struct Try {
    std::vector<Hunk> hunks;  // one, or two (a statement moved: taken out here, put in there)
    int passed = -1;          // -1: did not build or run
    int total = 0;
    bool all_passed = false;
    std::set<std::string> failing;  // the tests that failed
};

// A try is first run on the learner's failing checks only (`failing`, a Catch2 -f list): one that
// passes none of them cannot beat their run, and is not run on the rest (the kernels' checks on the
// emulator took ~2 s a try).
Try try_hunks(const Subject& s, const fs::path& dir, const Recipe& recipe, const fs::path& build_dir,
              const std::vector<std::string>& learner, const std::vector<Hunk>& hunks, int n, const fs::path& failing) {
    Try t;
    t.hunks = hunks;
    std::vector<std::string> text = learner;  // the later hunk first: the earlier one's lines stay put
    for (auto h = hunks.rbegin(); h != hunks.rend(); ++h) text = with_hunk_replaced(text, *h);
    const fs::path source = s.files.front();
    const fs::path variant = dir / fmt::format("try{}_{}", n, source.filename().string());
    const fs::path executable = dir / fmt::format("try{}_grader", n);
    if (!write_lines(variant, text) || !build_variant(build_dir, recipe, source, variant, executable)) return t;
    Subject v = s;
    v.files.front() = variant;
    v.report = dir / fmt::format("try{}.json", n);
    // The copy needs no search of its own, nor the catalogue: only which tests pass is read.
    const std::vector<std::string> no_search = {"HEADWISE_GRADE_SEARCH=off", "HEADWISE_GRADE_CATALOGUE=off"};
    run_step(v, executable, {"-f", failing.string()}, {}, 20, no_search);
    if (const auto r = read_report(v.report); !r || !r->finished || r->passed == 0) return t;
    run_step(v, executable, {}, {}, 20, no_search);
    if (const auto r = read_report(v.report); r && r->compiled && r->finished) {
        t.passed = r->passed;
        t.total = r->total;
        t.all_passed = r->all_passed();
        t.failing = failing_tests(*r);
    }
    return t;
}

bool deletion(const Hunk& h) { return h.learner_last < h.learner_first; }

std::string first_line(const std::vector<std::string>& learner, int line) {
    std::string text = learner[static_cast<std::size_t>(line - 1)];
    text.erase(0, text.find_first_not_of(" \t"));
    return text.size() > 70 ? text.substr(0, 67) + "..." : text;
}

// "your line 23 (`...`)" or "your lines 23-25 (from `...`)".
std::string learner_lines(const std::vector<std::string>& learner, const Hunk& h) {
    if (h.learner_first == h.learner_last)
        return fmt::format("your line {} (`{}`)", h.learner_first, first_line(learner, h.learner_first));
    return fmt::format("your lines {}-{} (from `{}`)", h.learner_first, h.learner_last,
                       first_line(learner, h.learner_first));
}

std::string place(const Hunk& h) {
    return h.learner_first <= 1 ? "at the top of your file" : fmt::format("after your line {}", h.learner_first - 1);
}

// "a line" or "3 lines": what the solution has where the learner has none.
std::string lines_missing(const Hunk& h) {
    return h.solution_text.size() == 1 ? "a line" : fmt::format("{} lines", h.solution_text.size());
}

// The same, after "the solution's": "line", "2 lines".
std::string solution_lines(const Hunk& h) {
    return h.solution_text.size() == 1 ? "line" : fmt::format("{} lines", h.solution_text.size());
}

// One piece, as the learner finds it in their file.
std::string piece(const std::vector<std::string>& learner, const Hunk& h) {
    return deletion(h) ? "the place " + place(h) : learner_lines(learner, h);
}

// The learner's lines from the first piece's to the last's.
Hunk span(const std::vector<Hunk>& hunks) {
    Hunk all;
    all.learner_first = hunks.front().learner_first;
    all.learner_last = hunks.front().learner_last;
    for (const Hunk& h : hunks) all.learner_last = std::max(all.learner_last, h.learner_last);
    return all;
}

// What was tried, as the start of the sentence.
std::string what_was_tried(const std::vector<std::string>& learner, const std::vector<Hunk>& hunks) {
    if (hunks.size() == 2) {
        const Hunk& taken = deletion(hunks[0]) ? hunks[1] : hunks[0];
        const Hunk& missing = deletion(hunks[0]) ? hunks[0] : hunks[1];
        if (deletion(missing) && !deletion(taken) && missing.solution_text.size() == 1 &&
            taken.learner_first == taken.learner_last &&
            normalized(missing.solution_text[0]) ==
                normalized(learner[static_cast<std::size_t>(taken.learner_first - 1)]))
            return fmt::format("with {} moved to where the solution has it, {}", learner_lines(learner, taken),
                               place(missing));
        return fmt::format("with {} and {} as the solution has them", piece(learner, hunks[0]),
                           piece(learner, hunks[1]));
    }
    if (hunks.size() > 2) return fmt::format("with {} as the solution has them", learner_lines(learner, span(hunks)));
    const Hunk& h = hunks.front();
    if (deletion(h))
        return fmt::format("with the solution's {} put in {}, where yours has none", solution_lines(h), place(h));
    return fmt::format("with {} as the solution has {}", learner_lines(learner, h),
                       h.learner_first == h.learner_last ? "it" : "them");
}

// The last line of the braced body that opens on line `first` (1-based), or 0.
int body_end(const std::vector<std::string>& lines, int first) {
    int depth = 0;
    bool opened = false;
    for (int n = first; n <= static_cast<int>(lines.size()); ++n) {
        for (const char c : lines[static_cast<std::size_t>(n - 1)]) {
            if (c == '{') ++depth, opened = true;
            if (c == '}') --depth;
        }
        if (opened && depth <= 0) return n;
        if (!opened && n > first + 1) return 0;
    }
    return 0;
}

// The lambdas or functions the learner defines (whatever the solution has) that the lines
// first..last call or pass by name (std::transform(a, b, out, gelu)), six at most (a layer of
// exercise 7 uses five of its own; at four, `gelu`, passed to std::transform, was the one left out):
// `name` (your lines A-B)[, `other` (...)] [or `last` (...)]. Empty when they use none. Putting the calling
// lines back as the solution has them also takes the helper out of play, so the mistake may be in
// it rather than on those lines.
std::string own_helper_called(const std::vector<std::string>& learner, int first, int last) {
    // A call (`dense(`), or a function passed by name (std::transform(a, b, out, gelu)).
    static const std::regex use(R"(([A-Za-z_]\w*)\s*\(|[(,]\s*([A-Za-z_]\w*)\s*[,)])");
    static const std::set<std::string> keywords{
        "for",     "if",          "while",    "switch",  "return",           "sizeof",     "catch",       "decltype",
        "alignof", "static_cast", "noexcept", "alignas", "reinterpret_cast", "const_cast", "dynamic_cast"};
    // A comment's words are not calls or definitions.
    const auto code = [](const std::string& line) { return code_of(line, true); };
    const auto defines = [&](const std::string& text, const std::string& name) {
        const std::string line = code(text);
        const std::string before = R"((^|[^\w.>:]))";
        if (std::regex_search(line, std::regex(before + name + R"(\s*=\s*\[)"))) return true;  // a lambda
        // A function on one line: `float gelu(float z) { return ...; }`.
        if (std::regex_search(line,
                              std::regex(R"(^\s*[\w:<>&*]+(\s+[\w:<>&*]+)*\s+[&*]?)" + name + R"(\s*\([^;{]*\)\s*\{)")))
            return true;
        return std::regex_search(line, std::regex(before + name + R"(\s*\([^;]*$)")) &&  // a function
               line.find("return") == std::string::npos && line.find('=') == std::string::npos;
    };
    // Each helper of theirs the lines use, once, in order: "`dense` (your lines 15-26) or `gelu` (...)".
    std::vector<std::string> named;
    std::set<std::string> seen;
    for (int n = first; n <= last && named.size() < 6; ++n) {
        const std::string text = code(learner[static_cast<std::size_t>(n - 1)]);
        for (std::sregex_iterator m(text.begin(), text.end(), use), end; m != end && named.size() < 6; ++m) {
            const std::string name = (*m)[1].matched ? (*m)[1].str() : (*m)[2].str();
            if (keywords.contains(name) || !seen.insert(name).second) continue;
            for (int d = 1; d <= static_cast<int>(learner.size()); ++d) {
                if (d >= first && d <= last) continue;
                if (!defines(learner[static_cast<std::size_t>(d - 1)], name)) continue;
                if (const int e = body_end(learner, d); e > d) {
                    named.push_back(fmt::format("`{}` (your lines {}-{})", name, d, e));
                    break;
                } else if (e == d) {
                    named.push_back(fmt::format("`{}` (your line {})", name, d));
                    break;
                }
            }
        }
    }
    std::string said;
    for (std::size_t k = 0; k < named.size(); ++k)
        said += (k == 0 ? "" : k + 1 == named.size() ? " or " : ", ") + named[k];
    return said;
}

std::string sentence(const std::vector<std::string>& learner, const Try& best, int learner_passed) {
    const std::string tried = what_was_tried(learner, best.hunks);
    const Hunk& first = best.hunks.front();
    std::string mistake = best.hunks.size() > 2                       ? "in those lines"
                          : best.hunks.size() == 2                    ? "there"
                          : deletion(first)                           ? lines_missing(first) + " left out there"
                          : first.learner_first == first.learner_last ? "on that line"
                                                                      : "in those lines";
    const bool one_line = best.hunks.size() == 1 && first.learner_first == first.learner_last;
    for (const Hunk& h : best.hunks) {
        if (deletion(h)) continue;
        if (const std::string helper = own_helper_called(learner, h.learner_first, h.learner_last); !helper.empty()) {
            mistake += fmt::format(" or in {}, which {} call{}", helper, one_line ? "it" : "they", one_line ? "s" : "");
            break;
        }
    }
    if (best.all_passed)
        return fmt::format("found by trying: {}, and nothing else changed, every test passes -- the mistake is {}",
                           tried, mistake);
    return fmt::format(
        "found by trying: {}, and nothing else changed, {} of the {} tests pass instead of {} -- "
        "one mistake is {}",
        tried, best.passed, best.total, learner_passed, mistake);
}

// Whether a search sentence's "(line N" (the solution's numbering) falls on a slip of the learner's:
// one line of theirs in place of the solution's one. A line in a rewrite (several lines for one,
// one for several, none) is where the search's edit has the learner's effect, not where they made
// it: their own lines are tried then.
// `slip_only` false: whether it falls on any line the learner changed.
const Hunk* hunk_of_edit(const std::string& sentence, const std::vector<Hunk>& hunks) {
    for (std::size_t at = 0; (at = sentence.find("(line ", at)) != std::string::npos; ++at) {
        const int line = std::atoi(sentence.c_str() + at + 6);
        for (const Hunk& h : hunks)
            if (line >= h.solution_first && line <= h.solution_last) return &h;
    }
    return nullptr;
}

bool names_a_slip(const std::string& sentence, const std::vector<Hunk>& hunks, bool slip_only = true) {
    const Hunk* h = hunk_of_edit(sentence, hunks);
    return h != nullptr &&
           (!slip_only || (h->learner_first == h->learner_last && h->solution_first == h->solution_last));
}

// Whether the search's edit ("with `X` in place of `Y` (line N ...)") is the learner's own line,
// as they wrote it: the slip they made, not another edit of that line with the same effect on the
// grader's inputs (an `m == 0.0f` matched by `m == sum`), which would mislead.
bool edit_is_theirs(const std::string& sentence, const std::vector<Hunk>& hunks,
                    const std::vector<std::string>& learner) {
    const Hunk* h = hunk_of_edit(sentence, hunks);
    const std::string edited = edited_line_of(sentence);
    return h != nullptr && !edited.empty() &&
           normalized(learner[static_cast<std::size_t>(h->learner_first - 1)]) == normalized(edited);
}

// A function the learner has not written yet (the stub's not_implemented_yet() is still there):
// putting its body back is not finding a mistake.
bool unwritten(const std::vector<std::string>& learner, const Hunk& h) {
    for (int line = h.learner_first; line <= h.learner_last; ++line)
        if (learner[static_cast<std::size_t>(line - 1)].find("not_implemented_yet") != std::string::npos) return true;
    return false;
}

fs::path solution_of(const Subject& s, const TransplantSetup& t) {
    if (!t.solution.empty()) return t.solution;
    const fs::path f = s.files.front();
    return s.source_dir / "solutions" / f.parent_path().filename() / f.filename();
}

}  // namespace

namespace {

// The two files' lines aligned: the hunks, and each solution line's place in the learner's file.
struct Alignment {
    std::vector<Hunk> hunks;
    std::map<int, int> learner_of;  // 1-based solution line -> 1-based learner line
};

Alignment align(const std::vector<std::string>& learner, const std::vector<std::string>& solution) {
    const Significant a = significant(learner), b = significant(solution);
    const Scores scores = alignment_scores(a, b);
    const auto& t = scores.table;
    Alignment al;
    std::size_t i = 0, j = 0;
    // A match that the best alignment makes here.
    const auto same = [&] {
        return i < a.text.size() && j < b.text.size() && a.text[i] == b.text[j] &&
               t[i][j] == t[i + 1][j + 1] + scores.match(a, b, i, j);
    };
    while (i < a.text.size() || j < b.text.size()) {
        if (same()) {
            al.learner_of[b.index[j] + 1] = a.index[i] + 1;
            ++i, ++j;
            continue;
        }
        const std::size_t i0 = i, j0 = j;
        while ((i < a.text.size() || j < b.text.size()) && !same()) {
            if (j >= b.text.size() || (i < a.text.size() && t[i + 1][j] >= t[i][j + 1]))
                ++i;
            else
                ++j;
        }
        Hunk h;
        h.learner_first = i > i0 ? a.index[i0] + 1 : (i0 > 0 ? a.index[i0 - 1] + 2 : 1);
        h.learner_last = i > i0 ? a.index[i - 1] + 1 : h.learner_first - 1;
        if (j > j0) {
            h.solution_first = b.index[j0] + 1;
            h.solution_last = b.index[j - 1] + 1;
            for (int k = b.index[j0]; k <= b.index[j - 1]; ++k) h.solution_text.push_back(solution[k]);
            for (int k = h.solution_first; k <= h.solution_last; ++k) al.learner_of[k] = h.learner_first;
        }
        al.hunks.push_back(std::move(h));
    }
    return al;
}

}  // namespace

std::vector<Hunk> differing_hunks(const std::vector<std::string>& learner, const std::vector<std::string>& solution) {
    return align(learner, solution).hunks;
}

int learner_line_of(int solution_line, const std::vector<std::string>& learner,
                    const std::vector<std::string>& solution) {
    const Alignment al = align(learner, solution);
    const auto at = al.learner_of.find(solution_line);
    return at == al.learner_of.end() ? 0 : at->second;
}

namespace {

// Where the solution's line stands in the learner's file, as "line N": the same line, or the one
// learner line that stands for it. Where the learner wrote several lines in its place (a rewrite,
// a helper of their own), the whole piece, "your lines A-B": its first line alone may be a call
// to the helper, not where the mistake is. Empty when unknown.
std::string learner_place_of(int solution_line, const Alignment& al, const std::vector<std::string>& learner) {
    for (const Hunk& h : al.hunks) {
        if (solution_line < h.solution_first || solution_line > h.solution_last) continue;
        if (h.learner_last < h.learner_first)
            return h.learner_first <= 1
                       ? "where yours has no such line, at its top"
                       : fmt::format("where yours has no such line, after your line {}", h.learner_first - 1);
        const bool one = h.learner_first == h.learner_last;
        const std::string lines = one ? fmt::format("your line {}", h.learner_first)
                                      : fmt::format("your lines {}-{}", h.learner_first, h.learner_last);
        const std::string helper = own_helper_called(learner, h.learner_first, h.learner_last);
        if (!helper.empty())
            return fmt::format("{} and {}, which {} call{}", lines, helper, one ? "it" : "they", one ? "s" : "");
        if (!one) return lines;  // (one line: "line N", below)
    }
    const auto at = al.learner_of.find(solution_line);
    return at == al.learner_of.end() ? "" : fmt::format("line {}", at->second);
}

// Of a place's words (", in attention, the loop over i"), those the learner's file bears out: a
// function or a lambda of that name, a loop over that counter.
std::string context_in_learner(const std::string& context, const std::vector<std::string>& learner) {
    const auto has = [&](const std::regex& r) {
        return std::ranges::any_of(learner, [&](const std::string& l) { return std::regex_search(l, r); });
    };
    std::string kept;
    std::size_t p = 0;
    while (p < context.size()) {
        std::size_t next = context.find(", ", p + 1);
        if (next == std::string::npos) next = context.size();
        const std::string part = context.substr(p, next - p);  // ", in f" or ", the loop over i"
        static const std::regex in(R"(^, in ([A-Za-z_]\w*)$)"), loop(R"(^, the loop over ([A-Za-z_]\w*)$)");
        std::smatch m;
        bool borne = true;
        if (std::regex_match(part, m, in))
            borne = has(std::regex("\\b" + m[1].str() + R"(\s*(\(|=\s*\[))"));
        else if (std::regex_match(part, m, loop))
            borne = has(std::regex(R"(\bfor\s*\(.*\b)" + m[1].str() + R"(\b\s*(=|:|\{))"));
        if (borne) kept += part;
        p = next;
    }
    return kept;
}

}  // namespace

std::string in_learner_lines(const std::string& sentence, const std::vector<std::string>& learner,
                             const std::vector<std::string>& solution) {
    const Alignment al = align(learner, solution);
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = sentence.find("(line ", from)) != std::string::npos;) {
        const std::size_t digits = at + 6;
        std::size_t end = digits;
        while (end < sentence.size() && std::isdigit(static_cast<unsigned char>(sentence[end]))) ++end;
        const int line = end > digits ? std::atoi(sentence.c_str() + digits) : 0;
        const std::string place = line > 0 ? learner_place_of(line, al, learner) : "";
        // Unknown in theirs: the solution's line, said so (its number is no line of the learner's).
        out += sentence.substr(from, at + 1 - from) +
               (place.empty() ? "the solution's " + sentence.substr(at + 1, end - at - 1) : place);
        from = end;
        // The search's words for the place are the solution's ("in layer_norm, the loop over i"):
        // beside the learner's lines, only those their file bears out.
        if (const std::size_t close = sentence.find(')', end); !place.empty() && close != std::string::npos) {
            out += context_in_learner(sentence.substr(end, close - end), learner);
            from = close;
        }
    }
    return out + sentence.substr(from);
}

std::vector<std::string> with_hunk_replaced(const std::vector<std::string>& learner, const Hunk& h) {
    std::vector<std::string> out(learner.begin(), learner.begin() + (h.learner_first - 1));
    out.insert(out.end(), h.solution_text.begin(), h.solution_text.end());
    const int resume = std::max(h.learner_last, h.learner_first - 1);
    out.insert(out.end(), learner.begin() + resume, learner.end());
    return out;
}

namespace {

// The search's edit, put in the learner's line numbers. True when it is all there is to say: it
// is the learner's own slip, a line they changed one for one, as they wrote it. Otherwise
// (another edit with the same effect, or one inside a rewrite of theirs) the learner's own changed
// lines are tried.
bool search_said_it(Report& report, const fs::path& path, const std::vector<std::string>& learner,
                    const std::vector<std::string>& solution) {
    if (report.edit.empty()) return false;
    const std::vector<Hunk> hunks = differing_hunks(learner, solution);
    const bool a_slip = names_a_slip(report.edit, hunks) && edit_is_theirs(report.edit, hunks, learner);
    const std::string mapped = in_learner_lines(report.edit, learner, solution);
    if (mapped != report.edit) {
        report.edit = mapped;
        write_report(path, report);
    }
    return a_slip;
}

// The small differing pieces that are worth a try; none when there are too many (a rewrite).
std::vector<Hunk> pieces_to_try(const std::vector<std::string>& learner, const std::vector<std::string>& solution,
                                const TransplantSetup& t) {
    std::vector<Hunk> hunks;
    for (const Hunk& h : differing_hunks(learner, solution))
        if (h.learner_last - h.learner_first + 1 <= t.max_hunk_lines &&
            static_cast<int>(h.solution_text.size()) <= t.max_hunk_lines && !unwritten(learner, h))
            hunks.push_back(h);
    if (static_cast<int>(hunks.size()) > t.max_hunks) hunks.clear();
    return hunks;
}

// A rewrite's pieces, put back together: each run of neighbouring pieces (or one long piece) that
// spans at most t.max_region_lines of the learner's file and of the solution's, and that the
// single pieces and pairs did not already cover. Tried when no piece alone or pair explains the
// failure (the pieces of a rewrite seldom compile alone: they name each other's variables).
std::vector<std::vector<Hunk>> regions_of(const std::vector<std::string>& learner,
                                          const std::vector<std::string>& solution, const TransplantSetup& t,
                                          const std::vector<std::vector<Hunk>>& tried) {
    std::vector<Hunk> all;
    for (const Hunk& h : differing_hunks(learner, solution))
        if (!unwritten(learner, h)) all.push_back(h);
    const auto fits = [&](std::size_t a, std::size_t b) {
        const int solution_first = all[a].solution_last >= all[a].solution_first ? all[a].solution_first : 0;
        const int solution_last = all[b].solution_last >= all[b].solution_first ? all[b].solution_last : 0;
        return span({all.begin() + long(a), all.begin() + long(b) + 1}).learner_last - all[a].learner_first + 1 <=
                   t.max_region_lines &&
               (solution_first == 0 || solution_last == 0 || solution_last - solution_first + 1 <= t.max_region_lines);
    };
    std::vector<std::vector<Hunk>> regions;
    std::size_t covered = 0;  // pieces [0, covered) are in an earlier region
    for (std::size_t a = 0; a < all.size() && regions.size() < 2; ++a) {
        std::size_t b = a;
        while (b + 1 < all.size() && fits(a, b + 1)) ++b;
        if (b < covered || !fits(a, b)) continue;
        std::vector<Hunk> region(all.begin() + long(a), all.begin() + long(b) + 1);
        const bool seen = std::ranges::any_of(tried, [&](const std::vector<Hunk>& t) {
            return t.size() == region.size() && std::ranges::equal(t, region, [](const Hunk& x, const Hunk& y) {
                       return x.learner_first == y.learner_first && x.learner_last == y.learner_last;
                   });
        });
        if (!seen) regions.push_back(std::move(region));
        covered = b + 1;
    }
    return regions;
}

// Each piece alone, then (a statement moved, two slips) each pair of them.
std::vector<std::vector<Hunk>> tries_of(const std::vector<Hunk>& hunks) {
    std::vector<std::vector<Hunk>> tries;
    for (const Hunk& h : hunks) tries.push_back({h});
    if (hunks.size() <= 3)
        for (std::size_t a = 0; a < hunks.size(); ++a)
            for (std::size_t b = a + 1; b < hunks.size(); ++b) tries.push_back({hunks[a], hunks[b]});
    return tries;
}

// The tries in order, until one passes everything: the best that beats the learner's run and breaks
// nothing it passed (its failing tests are some of theirs). A pair counts only when it passes
// everything: a part of two rewritten pieces explains little. A single piece that helped is named
// before any pair is tried.
Try best_try(const Subject& s, const TransplantSetup& t, const Recipe& recipe, const fs::path& dir,
             const std::vector<std::string>& learner, const std::vector<std::vector<Hunk>>& tries, const Report& report,
             const std::function<void(const std::string&)>& progress) {
    const std::set<std::string> learner_failing = failing_tests(report);
    const fs::path failing = dir / "failing.txt";
    write_check_list(failing, {learner_failing.begin(), learner_failing.end()});
    Try best;
    // Two tries at a time, one a core (each a compile of the learner's file: exercise 3's four took
    // 10 s one after another, cold), weighed in their order: the one after a try that passes
    // everything, or a pair's after one that passed more, is compiled for nothing but not counted.
    const auto jobs = static_cast<std::size_t>(std::max(1, t.jobs));
    for (std::size_t first = 0; first < tries.size() && !best.all_passed; first += jobs) {
        if (tries[first].size() == 2 && best.passed >= 0) break;
        if (progress)
            progress(
                fmt::format("trying your code with pieces that differ from the solution put back ({} of at most {})",
                            first + 1, tries.size()));
        std::vector<std::future<Try>> batch;
        for (std::size_t n = first; n < std::min(tries.size(), first + jobs); ++n)
            batch.push_back(std::async(std::launch::async, [&, n] {
                return try_hunks(s, dir, recipe, t.build_dir, learner, tries[n], static_cast<int>(n), failing);
            }));
        bool stop = false;
        for (std::size_t n = first; n < first + batch.size() && !stop; ++n) {
            Try tried = batch[n - first].get();
            if ((stop = best.all_passed || (tries[n].size() == 2 && best.passed >= 0))) break;
            const bool subset = std::includes(learner_failing.begin(), learner_failing.end(), tried.failing.begin(),
                                              tried.failing.end());
            const bool counts = tried.hunks.size() == 1 || tried.all_passed;
            if (counts && tried.total == report.total && subset && tried.passed > std::max(best.passed, report.passed))
                best = tried;
        }
        if (stop) break;
    }
    return best;
}

}  // namespace

std::string transplant_step(const Subject& s, const TransplantSetup& t,
                            const std::function<void(const std::string&)>& progress) {
    auto report = read_report(s.report);
    if (!report || !worth_locating(*report) || s.files.empty() ||
        (!report->repaired.empty() && !report->repaired_partly))
        return {};  // nothing to locate: it passed, it did not run, nothing is written yet, or it is repaired
    const std::vector<std::string> learner = lines_of_file(s.files.front());
    const std::vector<std::string> solution = lines_of_file(solution_of(s, t));
    const std::vector<Hunk> hunks = differing_hunks(learner, solution);
    // Kept beside the lines found: a search edit inside a rewrite of theirs (it says what the
    // rewrite does); not one on a line they changed one for one, written otherwise (search_said_it).
    const bool edit_in_a_rewrite =
        !report->edit.empty() && names_a_slip(report->edit, hunks, false) && !names_a_slip(report->edit, hunks);
    if (solution.empty() || search_said_it(*report, s.report, learner, solution)) return {};
    const std::vector<std::vector<Hunk>> tries = tries_of(pieces_to_try(learner, solution, t));
    const std::vector<std::vector<Hunk>> regions = regions_of(learner, solution, t, tries);
    const auto recipe =
        tries.empty() && regions.empty() ? std::nullopt : recipe_of(t.build_dir, t.target, s.files.front());
    if (!recipe) return {};
    const fs::path dir = t.build_dir / "grade" / "transplant" / t.target;
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    Try best = best_try(s, t, *recipe, dir, learner, tries, *report, progress);
    if (best.passed < 0 && !regions.empty()) best = best_try(s, t, *recipe, dir, learner, regions, *report, progress);
    if (best.passed < 0 || !(report = read_report(s.report))) return {};
    report->located = sentence(learner, best, report->passed);
    // A search edit on a line the learner did not change, or another edit of their slip's line,
    // only distracts once the learner's own line is found; one inside their rewrite still says
    // what the rewrite does.
    if (best.all_passed && !edit_in_a_rewrite) report->edit.clear();
    // Their lines put back explain every check: a repair of part of them says less.
    if (best.all_passed && report->repaired_partly) report->repaired.clear(), report->repaired_partly = false;
    write_report(s.report, *report);
    return report->located;
}

}  // namespace headwise::gradekit
