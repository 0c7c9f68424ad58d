// gradekit/mistake.cpp -- see mistake.hpp.
#include "gradekit/mistake.hpp"

#include "gradekit/text.hpp"

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace headwise::gradekit {

namespace {

constexpr std::array expectation_keys = {"expect",         "expect-where",       "expect-part",    "expect-first",
                                         "expect-shown",   "expect-lesson",      "expect-not",     "expect-fresh",
                                         "expect-located", "expect-search-edit", "expect-repaired"};

[[noreturn]] void bad(const std::string& path, int line, const std::string& what) {
    throw std::invalid_argument(fmt::format("{}:{}: {}", path, line, what));
}

}  // namespace

std::vector<std::string> Mistake::expected(const std::string& key) const {
    std::vector<std::string> values;
    for (const auto& e : expectations)
        if (e.key == key) values.push_back(e.value);
    return values;
}

Mistake parse_mistake(const std::string& text, const std::string& path) {
    Mistake m;
    m.path = path;
    std::istringstream lines(text);
    std::string line;
    int line_no = 0;
    bool pending = false;  // a "replace:" waiting for its "with:"
    int described[3] = {0, 0, 0};
    std::string* description[3] = {&m.name, &m.why, &m.fix};
    const char* description_keys[3] = {"mistake", "why", "fix"};
    while (std::getline(lines, line)) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) bad(path, line_no, fmt::format("not a 'key: value' line: {}", line));
        const std::string key = line.substr(0, colon);
        // "with:" may stand alone (the line replaced by nothing); every other value follows ": ".
        std::string value = line.substr(colon + 1);
        if (!value.empty()) {
            if (value[0] != ' ') bad(path, line_no, fmt::format("'{}:' is followed by one space", key));
            value.erase(0, 1);
        }
        if (key == "replace" || key.rfind("replace#", 0) == 0) {
            if (pending) bad(path, line_no, "a 'replace:' whose 'with:' is missing before it");
            MistakeEdit e;
            e.from = value;
            e.line = line_no;
            if (key != "replace") {
                const std::string n = key.substr(8);
                if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || std::stoi(n) < 1)
                    bad(path, line_no, fmt::format("'{}': replace#N counts from 1", key));
                e.occurrence = std::stoi(n);
            }
            if (e.from.empty()) bad(path, line_no, "nothing to replace");
            m.edits.push_back(e);
            pending = true;
        } else if (key == "own") {
            if (!m.own.empty()) bad(path, line_no, "'own:' given twice");
            if (value.empty() || value.find("..") != std::string::npos)
                bad(path, line_no, "'own:' names a file beside the .mistake");
            m.own = value;
        } else if (key == "with") {
            if (!pending) bad(path, line_no, "'with:' without a 'replace:' before it");
            m.edits.back().to = value;
            pending = false;
        } else if (std::find(expectation_keys.begin(), expectation_keys.end(), std::string_view(key)) !=
                   expectation_keys.end()) {
            if (value.empty()) bad(path, line_no, fmt::format("'{}:' with nothing after it", key));
            m.expectations.push_back({key, value, line_no});
        } else {
            int k = 0;
            while (k < 3 && key != description_keys[k]) ++k;
            if (k == 3) {
                bad(path, line_no,
                    fmt::format("unknown key '{}' (mistake, why, fix, own, replace, replace#N, with, expect, "
                                "expect-where, expect-part, expect-first, expect-shown, expect-lesson, "
                                "expect-not, expect-fresh, expect-located, expect-search-edit, expect-repaired)",
                                key));
            }
            if (++described[k] > 1) bad(path, line_no, fmt::format("'{}:' given twice", key));
            *description[k] = value;
        }
    }
    if (pending) bad(path, line_no, "the last 'replace:' has no 'with:'");
    if (m.edits.empty()) bad(path, line_no, "no 'replace:' / 'with:' pair");
    const int stated = described[0] + described[1] + described[2];
    if (stated != 0 && (stated != 3 || m.name.empty() || m.why.empty() || m.fix.empty()))
        bad(path, line_no,
            "a catalogued mistake states each of \"mistake: <name>\", \"why: <line>\" and \"fix: <line>\" once");
    if (m.name.find_first_of(";\"\\") != std::string::npos) bad(path, 1, "a mistake's name holds no ; \" or \\");
    return m;
}

Mistake read_mistake(const std::filesystem::path& path) { return parse_mistake(read_text(path), path.string()); }

std::string apply_mistake(const Mistake& m, std::string text, const std::string& solution_path) {
    if (!m.own.empty()) {
        const std::filesystem::path own = std::filesystem::path(m.path).parent_path() / m.own;
        if (!std::filesystem::is_regular_file(own))
            bad(m.path, 1, fmt::format("'own:' names no file: {}", own.string()));
        text = read_text(own);
    }
    const std::string& base = m.own.empty() ? solution_path : m.own;
    for (const auto& e : m.edits) {
        std::size_t at = text.find(e.from);
        for (int k = 1; k < e.occurrence && at != std::string::npos; ++k) at = text.find(e.from, at + 1);
        if (at == std::string::npos || (e.occurrence == 0 && text.find(e.from, at + 1) != std::string::npos)) {
            bad(m.path, e.line,
                fmt::format("the text to replace must occur exactly once in {} (or say which: replace#N:): {}", base,
                            e.from));
        }
        text.replace(at, e.from.size(), e.to);
    }
    return text;
}

std::string ecmascript_from_cmake(const std::string& pattern) {
    std::string out;
    bool in_brackets = false;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            out += c;
            out += pattern[++i];
        } else if (in_brackets) {
            out += c;
            if (c == ']') in_brackets = false;
        } else if (c == '[') {
            out += c;
            in_brackets = true;
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];  // "[]...]"
        } else if (c == '.') {
            out += "[\\s\\S]";
        } else if (c == '{' || c == '}') {  // CMake has no {m,n}: a brace is itself
            out += '\\';
            out += c;
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace headwise::gradekit
