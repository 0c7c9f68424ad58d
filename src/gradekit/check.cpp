// gradekit/check.cpp -- see check.hpp.
#include "gradekit/check.hpp"

#include "gradekit/pipeline.hpp"
#include "gradekit/show.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

namespace headwise::gradekit {

namespace {

bool matches(const std::string& text, const std::string& cmake_pattern) {
    return std::regex_search(text, std::regex(ecmascript_from_cmake(cmake_pattern)));
}

std::string collapsed(const std::string& text) { return std::regex_replace(text, std::regex("[ \t\r\n]+"), " "); }

std::string shown(const Report& r, bool verbose) {
    ShowOptions o;
    o.id = r.id;
    o.verbose = verbose;
    return show_report(&r, o);
}

// What `headwise grade N -v` prints: at most 120 lines, no message or detail twice.
std::string check_printed(const Report& r, const std::string& flat) {
    const std::string printed = shown(r, true);
    const auto lines = std::count(printed.begin(), printed.end(), '\n');
    if (lines > 120)
        return fmt::format("`headwise grade -v` should print at most 120 lines for one mistake, it prints {}:\n{}",
                           lines, printed);
    for (const auto& f : r.failures) {
        std::vector<std::string> texts = {f.message};
        texts.insert(texts.end(), f.details.begin(), f.details.end());
        for (const auto& t : texts) {
            std::string text = collapsed(t);
            text.erase(0, text.find_first_not_of(' '));
            text.erase(text.find_last_not_of(' ') + 1);
            if (text.size() <= 20) continue;
            // Whole words only: "got 0" is not said again by "got 0.5".
            const std::string in = " " + flat + " ", word = " " + text + " ";
            if (in.find(word) != in.rfind(word))
                return fmt::format("`headwise grade -v` prints this twice: {}\n{}", text, printed);
        }
    }
    return "";
}

std::string check_part(const Report& r, const std::string& value) {
    std::smatch m;
    if (!std::regex_match(value, m, std::regex("(.+) ([0-9]+)/([0-9]+)")))
        return fmt::format("expect-part: '{}' is not '<name> <passed>/<total>'", value);
    std::string got = "(no such part)";
    for (const auto& p : r.parts)
        if (p.name == m[1].str()) got = fmt::format("{}/{}", p.passed, p.total);
    const std::string want = m[2].str() + "/" + m[3].str();
    return got == want ? "" : fmt::format("milestone '{}' should be {}, the report says {}", m[1].str(), want, got);
}

// Every expect line of a learner-style mistake against the report.
std::string check_expectations(const Report& r, const Mistake& spec) {
    std::string messages, wheres, lessons, said;
    for (const auto& f : r.failures) {
        messages += f.message + "\n";
        wheres += f.where + ":\n";
        lessons += f.lesson + "\n";
        said += f.message + "\n" + f.lesson + "\n";
        for (const auto& d : f.details) said += d + "\n";
    }
    const std::string flat = collapsed(shown(r, true));
    if (auto wrong = check_printed(r, flat); !wrong.empty()) return wrong;
    said += flat + "\n";  // expect-not covers what is printed too
    // The patched file is named <id>_<what>.cpp after <what>.mistake.
    const std::string stem = r.id + "_" + fs::path(spec.path).stem().string();
    bool any = false;
    for (const auto& e : spec.expectations) {
        std::string wrong;
        if (e.key == "expect") {
            if (!matches(messages, e.value))
                wrong = fmt::format("no failure message matches '{}'; the messages:\n{}", e.value, messages);
        } else if (e.key == "expect-where") {
            const std::string at = fmt::format("/{}.cpp:{}:", stem, e.value);
            if (wheres.find(at) == std::string::npos)
                wrong = fmt::format("no failure is located at {} (the learner's line); located at:\n{}", at, wheres);
        } else if (e.key == "expect-part") {
            wrong = check_part(r, e.value);
        } else if (e.key == "expect-first") {
            if (!matches(r.failures.at(0).message, e.value))
                wrong =
                    fmt::format("the first failure should match '{}'; it reads:\n{}", e.value, r.failures[0].message);
        } else if (e.key == "expect-shown") {
            const std::string printed = collapsed(shown(r, false));
            if (!matches(printed, e.value))
                wrong = fmt::format("`headwise grade` should print something matching '{}'; it prints:\n{}", e.value,
                                    printed);
        } else if (e.key == "expect-lesson") {
            if (!matches(lessons, e.value))
                wrong = fmt::format("no failure links to a lesson matching '{}'; the lessons:\n{}", e.value, lessons);
        } else if (e.key == "expect-not") {
            if (matches(said, e.value)) wrong = fmt::format("the report says what it must not ('{}')", e.value);
        } else {
            continue;
        }
        any = true;
        if (!wrong.empty()) return fmt::format("{}:{}: {}", spec.path, e.line, wrong);
    }
    return any ? "" : fmt::format("{} states no 'expect:' line", spec.path);
}

std::string check_lines(const Mistake& spec, const std::string& key, const std::string& step, const std::string& said) {
    for (const auto& e : spec.expectations)
        if (e.key == key && !matches(said, e.value))
            return fmt::format("{}:{}: the {} step said:\n{}\nwhich does not match:\n{}", spec.path, e.line, step, said,
                               e.value);
    return "";
}

// A located case: the steps after the failed grade (gradekit/pipeline.hpp, in their one order):
// the repair step (expect-repaired), the transplant step (expect-located), the fresh-memory step
// (expect-fresh). The search names no edit (or, expect-search-edit, one the steps drop).
std::string check_located(const Mistake& spec, const LocatedSetup& l) {
    const auto edit_now = [&] { return read_report(l.subject.report).value_or(Report{}).edit; };
    const bool search_edit = !spec.expected("expect-search-edit").empty();
    const std::string edit = edit_now();
    if (search_edit) {
        if (auto wrong = check_lines(spec, "expect-search-edit", "search", edit); !wrong.empty()) return wrong;
    } else if (!edit.empty() && !spec.expected("expect-located").empty()) {
        return "the search named an edit, so the transplant step would not run: " + edit;
    }
    // Through the compile begun in a thread of its own, as `headwise grade` runs it (here after the
    // build and the run: the grade's order, not its overlap).
    const AfterRun after{l.build_dir, l.target, l.grader, l.solution};
    Begun begun = begin_before_build(l.subject, after);
    const Findings f = after_failed_run(l.subject, after, {}, &begun);
    if (auto wrong = check_lines(spec, "expect-repaired", "repair", f.repaired); !wrong.empty()) return wrong;
    if (auto wrong = check_lines(spec, "expect-located", "transplant", f.located); !wrong.empty()) return wrong;
    if (auto wrong = check_lines(spec, "expect-fresh", "fresh-memory", f.fresh); !wrong.empty()) return wrong;
    if (!spec.expected("expect-fresh").empty() && !edit_now().empty())
        return "the fresh-memory step left the search's edit named: " + edit_now();
    if (search_edit && !edit_now().empty())
        return "the search's edit, not the learner's own, was kept beside their line: " + edit_now();
    return "";
}

}  // namespace

std::string check_report(Expected expected, const Mistake* spec, const fs::path& report,
                         const std::optional<LocatedSetup>& located) {
    const auto read = read_report(report);
    if (!read) return fmt::format("the grader wrote no report {}", report.string());
    const Report& r = *read;
    if (!r.compiled || r.total < 1) return "the report should say compiled true and at least one test";
    const int failures = static_cast<int>(r.failures.size());
    if (expected == Expected::solution) {
        if (r.passed != r.total || failures != 0)
            return fmt::format("on the solution the grader should pass every test: {} of {} passed", r.passed, r.total);
        return "";
    }
    if (r.passed == r.total && failures == 0) return "the grader passed a subject it should reject";
    if (expected == Expected::stub && r.passed != 0)
        return fmt::format("on the pristine stub no test may pass, yet {} of {} did", r.passed, r.total);
    if (expected == Expected::stub && failures != r.total)
        return fmt::format("on the pristine stub every one of the {} tests should fail, {} did", r.total, failures);
    if (failures == 0) return "the grader failed but its report lists no failure";
    if (spec == nullptr && expected == Expected::mistake) return "a mistake's check needs its .mistake";
    // A located case may be named a catalogued mistake: the steps after the grade are what it tests.
    const bool located_case =
        spec != nullptr && (!spec->expected("expect-fresh").empty() || !spec->expected("expect-located").empty() ||
                            !spec->expected("expect-repaired").empty());
    int named = 0;
    for (const auto& f : r.failures) {
        if (!f.mistake.empty() && !std::regex_match(f.explanation, std::regex("[^\n]+\n[^\n]+")))
            return fmt::format("'{}': the explanation of '{}' should be two lines", f.test, f.mistake);
        if (expected == Expected::stub && f.message.find("not implemented yet") == std::string::npos)
            return fmt::format("'{}' failed on the stub without saying \"not implemented yet\": {}", f.test, f.message);
        if (expected != Expected::mistake || f.mistake.empty() || located_case) continue;
        if (!spec->catalogued())
            return fmt::format("'{}' named the catalogued mistake '{}' for a mistake that is not in the catalogue",
                               f.test, f.mistake);
        if (f.mistake != spec->name)
            return fmt::format("'{}' blamed '{}' for the planted mistake '{}'", f.test, f.mistake, spec->name);
        ++named;
    }
    if (expected != Expected::mistake) return "";
    if (spec->catalogued())
        return named > 0 ? ""
                         : fmt::format("the grader rejected the planted mistake '{}' but never named it", spec->name);
    if (located_case) {
        if (!located) return fmt::format("{} is a located case: its check needs the steps' options", spec->path);
        return check_located(*spec, *located);
    }
    return check_expectations(r, *spec);
}

}  // namespace headwise::gradekit
