// runner/hints.cpp -- see hints.hpp.
#include "hints.hpp"

#include "exercise_files.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace headwise::runner {

namespace {

std::string lower(std::string s) {
    std::ranges::transform(s, s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string trimmed(const std::string& s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    const auto last = s.find_last_not_of(" \t\r\n");
    return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

// "<!-- when failing: a; b -->" -> {"a", "b"}; nothing for any other line.
std::optional<std::vector<std::string>> when_failing(const std::string& line) {
    const std::string t = trimmed(line);
    const std::string open = "<!-- when failing:", close = "-->";
    if (!t.starts_with(open) || !t.ends_with(close)) return std::nullopt;
    std::vector<std::string> phrases;
    std::istringstream in(t.substr(open.size(), t.size() - open.size() - close.size()));
    for (std::string phrase; std::getline(in, phrase, ';');)
        if (!trimmed(phrase).empty()) phrases.push_back(lower(trimmed(phrase)));
    return phrases;
}

}  // namespace

fs::path hints_path(const Exercise& e) {
    return e.hints.empty() ? source_dir() / "exercises" / e.dir / "HINTS.md" : source_dir() / e.hints;
}

std::vector<Hint> parse_hints(const std::string& markdown) {
    std::vector<Hint> hints;
    std::istringstream in(markdown);
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("## ")) {
            inside = line.starts_with("## Hint");
            if (inside) hints.emplace_back();
            continue;
        }
        if (!inside) continue;
        if (auto phrases = when_failing(line)) {
            hints.back().about.insert(hints.back().about.end(), phrases->begin(), phrases->end());
            continue;
        }
        hints.back().text += line + '\n';
    }
    for (auto& h : hints) h.text = trimmed(h.text);
    return hints;
}

std::vector<Hint> load_hints(const Exercise& e) {
    const auto markdown = read_file(hints_path(e));
    return markdown ? parse_hints(*markdown) : std::vector<Hint>{};
}

std::optional<KeyedHint> hint_for_failure(const std::vector<Hint>& hints, const gradekit::Report& report,
                                          const std::set<int>& revealed) {
    if (report.all_passed()) return std::nullopt;
    for (std::size_t k = 0; k < hints.size(); ++k) {
        if (revealed.contains(static_cast<int>(k) + 1)) continue;
        for (const auto& f : report.failures) {
            const std::string seen = lower(f.test + "\n" + f.message);
            if (std::ranges::any_of(hints[k].about, [&](const std::string& p) { return seen.find(p) != seen.npos; }))
                return KeyedHint{static_cast<int>(k) + 1, f.test};
        }
    }
    return std::nullopt;
}

}  // namespace headwise::runner
