// gradekit/show.cpp -- see show.hpp.
#include "gradekit/show.hpp"

#include <fmt/format.h>

#include <set>
#include <sstream>

namespace headwise::gradekit {

namespace {

constexpr std::size_t line_width = 110;

// `text` broken at spaces into lines of at most line_width columns, each starting with `indent`.
void wrapped(std::string& out, const std::string& indent, const std::string& text) {
    const std::size_t room = line_width > indent.size() + 20 ? line_width - indent.size() : 20;
    std::istringstream words(text);
    std::string line, word;
    while (words >> word) {
        if (!line.empty() && line.size() + 1 + word.size() > room) {
            out += indent + line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) out += indent + line + "\n";
}

// Each line as it is (compiler output keeps its columns), indented.
void as_is(std::string& out, const std::string& indent, const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) out += indent + line + "\n";
}

// What makes two failures one root cause: thrown (or stopped) at the same line of the subject
// with the same error, its numbers aside (the sizes differ from test to test). Empty for a
// failure without a line: differing values are each test's own facts.
std::string root_cause(const Failure& f) {
    if (f.where.empty()) return {};
    std::size_t at = f.message.find(": threw an exception");
    if (at == std::string::npos) at = f.message.find(": the emulator stopped the kernel");
    if (at == std::string::npos) return {};
    std::string key = f.where + "\n";
    for (const char c : f.message.substr(at))
        if (c < '0' || c > '9') key += c;
    return key;
}

}  // namespace

std::string milestones(const Report& r) {
    int parts = 0;
    for (const auto& p : r.parts) parts += p.name != "optional" ? 1 : 0;
    if (parts == 0) return {};
    // A test that did not run (the grader stopped at a sanitizer report before it) is neither
    // passed nor failed: it is counted apart.
    const auto state = [](const Part& p) {
        const int not_run = p.total - p.ran;
        if (p.passed == p.total) return std::string("done");
        if (p.ran == 0) return std::string("not run (the grader stopped before it)");
        return fmt::format("not yet ({} of {} tests pass{})", p.passed, p.total,
                           not_run > 0 ? fmt::format(", {} did not run", not_run) : std::string());
    };
    std::string s;
    for (const auto& p : r.parts)
        if (p.name != "optional") s += fmt::format("{}{} of {} {}", s.empty() ? "" : "; ", p.name, parts, state(p));
    for (const auto& p : r.parts)
        if (p.name == "optional") s += fmt::format("; optional: {} of {} tests pass", p.passed, p.total);
    return s;
}

std::string show_report(const Report* r, const ShowOptions& o) {
    const std::string head = fmt::format("  {:<5} {:<20}", o.id, o.dir);
    const std::string indent(8, ' ');
    std::string out;
    if (r == nullptr) return fmt::format("{}{:>6}  not graded: no report was written\n", head, "-");
    if (!r->compiled) {
        out += fmt::format("{}{:>6}  does not compile. The compiler's first error:\n", head, "-");
        as_is(out, indent, r->failures.empty() ? std::string("(no compiler message)") : r->failures[0].message);
        if (o.verbose && !r->failures.empty()) {
            out += indent + "the whole build output:\n";
            for (const auto& line : r->failures[0].details) out += indent + "  " + line + "\n";
        }
    } else {
        const std::string parts = milestones(*r);
        out += fmt::format("{}{:>6}  {}{}\n", head, fmt::format("{}/{}", r->passed, r->total),
                           r->all_passed() ? "passed" : "not passed yet", parts.empty() ? "" : " -- " + parts);
        // A confirmed edit is the diagnosis: half the numbers under it are enough.
        int budget = r->edit.empty() ? verbose_detail_lines : verbose_detail_lines / 2;
        std::set<std::string> printed;
        std::size_t held_back = 0;
        std::set<std::string> causes;
        for (const auto& f : r->failures) {
            out += indent + "FAIL " + f.test + "\n";
            if (const std::string cause = root_cause(f); !cause.empty() && !causes.insert(cause).second) {
                out += indent + "     the same error at " + f.where + " as above\n";
                continue;
            }
            wrapped(out, indent + "     ", f.message);
            // The learner's line under its first failure; a later one at the same place names it.
            if (!f.source.empty() && printed.insert(f.where + "\n" + f.source).second)
                out += indent + "       " + f.source + "\n";
            if (!f.lesson.empty() && printed.insert("reread: " + f.lesson).second)
                out += indent + "     reread: " + f.lesson + "\n";
            if (!o.verbose) continue;
            for (const auto& line : f.details) {
                // Said already: the message just above, or the same line (a shape and tolerance,
                // a sanitizer's frame) under an earlier check.
                if (line == f.message || !printed.insert(line).second) continue;
                if (budget-- > 0)
                    out += indent + "       " + line + "\n";
                else
                    ++held_back;
            }
        }
        if (held_back > 0)
            out += fmt::format("{}({} more detail lines are in the report, build/grade/{}.json)\n", indent, held_back,
                               o.id);
        bool diagnosable = false;  // a failure other than an unwritten function
        for (const auto& f : r->failures) diagnosable = diagnosable || f.message.rfind("not implemented yet", 0) != 0;
        // The learner's own edit, confirmed by the grader's search on every check.
        if (!r->edit.empty()) wrapped(out, indent, r->edit + ".");
        // Or the learner's lines that make the difference, found by grading copies of their file;
        // or their own lines repaired: the edit of their file that makes the checks pass (a repair
        // of part first: what `located` then says is about the checks it leaves failing).
        if (!r->located.empty() && !r->repaired_partly) wrapped(out, indent, r->located + ".");
        if (!r->repaired.empty()) wrapped(out, indent, r->repaired + ".");
        if (!r->located.empty() && r->repaired_partly) wrapped(out, indent, r->located + ".");
        if (diagnosable) {
            const auto& f = r->failures[0];
            if (!f.mistake.empty()) {
                out += fmt::format("{}known mistake \"{}\" (it reproduces every check, failing and passing):\n", indent,
                                   f.mistake);
                std::istringstream lines(f.explanation);
                for (std::string line; std::getline(lines, line);) wrapped(out, indent + "  ", line);
            } else if (r->located.empty() && r->repaired.empty()) {
                out +=
                    indent + "no known mistake matches every failing check: the differences above say where to look.\n";
            }
            if (!o.verbose)
                out +=
                    fmt::format("{}(`./headwise grade {} -v`: every failing check with shapes, elements, tolerance)\n",
                                indent, o.number);
        }
    }
    if (!r->warnings.empty()) {
        out += fmt::format("{}warnings in your file ({}; not errors, but often a bug):\n", indent, r->warnings.size());
        for (const auto& w : r->warnings) as_is(out, indent + "  ", w);
    }
    return out;
}

}  // namespace headwise::gradekit
