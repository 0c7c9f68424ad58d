// gradekit/unused.cpp -- see unused.hpp.
#include "gradekit/unused.hpp"

#include "gradekit/mutants.hpp"
#include "gradekit/repair.hpp"
#include "gradekit/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

namespace headwise::gradekit {

namespace {

// The function a line of the learner's file is in, by the place words of the edits made nearest
// it (at or before it first: a declaration's own initializer is usually edited): "split_heads" of
// "in split_heads, the loop over f". Empty when no edit says.
std::string function_at(int line, const std::vector<Variant>& variants) {
    const Variant* nearest = nullptr;
    for (const Variant& v : variants) {
        if (!v.context.starts_with("in ")) continue;
        const bool before = v.line <= line;
        if (nearest == nullptr) {
            nearest = &v;
            continue;
        }
        const bool nearest_before = nearest->line <= line;
        if ((before && !nearest_before) ||
            (before == nearest_before && std::abs(v.line - line) < std::abs(nearest->line - line)))
            nearest = &v;
    }
    if (nearest == nullptr) return {};
    const std::string words = nearest->context.substr(3);
    return words.substr(0, words.find(','));
}

// The function a check is about: the words before its first ": " ("split_heads" of "split_heads:
// hand-worked ...").
std::string checked_function(const std::string& check) {
    const auto colon = check.find(": ");
    return colon == std::string::npos ? std::string() : check.substr(0, colon);
}

// Whether a check about `checked` ("tiled") is about the learner's `function`: the same name, or
// one of its words (`attention_tiled`, `tiled_kernel`).
bool names(const std::string& function, const std::string& checked) {
    if (function == checked) return true;
    const auto at = function.find(checked);
    if (at == std::string::npos) return false;
    const std::size_t end = at + checked.size();
    return (at == 0 || function[at - 1] == '_') && (end == function.size() || function[end] == '_');
}

std::string line_of_text(const std::string& text, int number) {
    std::istringstream in(text);
    std::string line;
    for (int n = 0; n < number && std::getline(in, line); ++n) {}
    return line;
}

}  // namespace

std::vector<UnreadValue> unread_values(const std::vector<std::string>& warnings, const std::string& file) {
    // GCC: "<file>:31:28: warning: variable ‘s’ set but not used [-Wunused-but-set-variable]" and
    // "<file>:44:35: warning: unused variable ‘base’ [-Wunused-variable]" (ASCII quotes in the C locale).
    static const std::regex warned(
        R"(^(.*):([0-9]+):[0-9]+: warning: (?:unused variable|variable) (?:'|\xE2\x80\x98)([A-Za-z_]\w*)(?:'|\xE2\x80\x99)(?: set but not used)? \[-Wunused)");
    const std::string name = std::filesystem::path(file).filename().string();
    std::vector<UnreadValue> out;
    for (const std::string& w : warnings) {
        std::smatch m;
        if (!std::regex_search(w, m, warned)) continue;
        if (std::filesystem::path(m[1].str()).filename().string() != name) continue;
        out.push_back({std::stoi(m[2].str()), m[3].str()});
    }
    return out;
}

std::string unread_in_failing(const std::string& text, const std::vector<UnreadValue>& values,
                              const std::set<std::string>& failing_checks) {
    std::set<std::string> failing;
    for (const auto& check : failing_checks)
        if (const std::string f = checked_function(check); !f.empty()) failing.insert(f);
    if (values.empty() || failing.empty()) return {};
    const Mutants m = generate_own_mutants(text);
    std::vector<std::string> said;
    std::vector<std::string> functions;
    for (const UnreadValue& v : values) {
        const std::string function = function_at(v.line, m.variants);
        if (function.empty() || std::ranges::none_of(failing, [&](const std::string& f) { return names(function, f); }))
            continue;
        std::string line = your_line(v.line, line_of_text(text, v.line), m.variants);
        if (line.find(", in ") == std::string::npos) line.insert(line.size() - 1, ", in " + function);
        said.push_back(fmt::format("{} makes `{}`, and no line reads it", line, v.name));
        if (std::ranges::find(functions, function) == functions.end()) functions.push_back(function);
    }
    if (said.empty()) return {};
    std::string sentence;
    for (std::size_t i = 0; i < said.size(); ++i)
        sentence += (i == 0 ? "" : i + 1 == said.size() ? "; and " : "; ") + said[i];
    std::string named;
    for (std::size_t i = 0; i < functions.size(); ++i)
        named += (i == 0 ? "" : i + 1 == functions.size() ? " and " : ", ") + functions[i];
    return fmt::format("{} -- {} fail{} {} checks: a line there that should use {} may be written without {}", sentence,
                       named, functions.size() == 1 ? "s" : "", functions.size() == 1 ? "its" : "their",
                       said.size() == 1 ? "it" : "them", said.size() == 1 ? "it" : "them");
}

std::string unread_value_step(const Subject& s) {
    auto report = read_report(s.report);
    if (!report || !report->compiled || report->all_passed() || s.files.empty()) return {};
    // Nothing named, or a repair of part whose other checks still fail: the unread value is asked
    // about in the functions of those.
    const bool part = !report->repaired.empty() && report->repaired_partly && !report->still_failing.empty();
    if (!report->edit.empty() || !report->located.empty() || (!report->repaired.empty() && !part)) return {};
    if (std::ranges::any_of(report->failures, [](const Failure& f) { return !f.mistake.empty(); })) return {};
    const std::set<std::string> failing =
        part ? std::set<std::string>(report->still_failing.begin(), report->still_failing.end())
             : failing_tests(*report);
    std::string sentence = unread_in_failing(read_text(s.files.front()),
                                             unread_values(report->warnings, s.files.front().string()), failing);
    if (sentence.empty()) return {};
    if (part) sentence = "Of the checks still failing: " + sentence;
    report->located = sentence;
    write_report(s.report, *report);
    return sentence;
}

}  // namespace headwise::gradekit
