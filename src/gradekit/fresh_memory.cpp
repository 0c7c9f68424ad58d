// gradekit/fresh_memory.cpp -- see fresh_memory.hpp.
#include "gradekit/fresh_memory.hpp"

#include "gradekit/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>

namespace headwise::gradekit {

namespace {

// The search's edit is the learner's own line when the line it puts in ("with `...` in place
// of") stands in their file as it is: then it names what they wrote, fill or no fill.
bool edit_is_their_line(const Report& r, const std::filesystem::path& file) {
    const auto squeeze = [](std::string text) {
        std::erase_if(text, [](unsigned char c) { return std::isspace(c) != 0; });
        return text;
    };
    const std::string line = squeeze(edited_line_of(r.edit));
    if (line.empty()) return false;
    std::ifstream in(file);
    for (std::string l; std::getline(in, l);) {
        const std::size_t comment = l.find("//");
        if (squeeze(l.substr(0, comment)) == line) return true;
    }
    return false;
}

// A catalogued mistake, the search's edit, or a repair of part (what still fails may be memory
// never written: a zeroing left out, which no edit of the learner's lines puts back).
bool names_something(const Report& r) {
    return !r.edit.empty() || r.repaired_partly ||
           std::ranges::any_of(r.failures, [](const Failure& f) { return !f.mistake.empty(); });
}

}  // namespace

std::optional<Report> zero_filled_run(const Subject& s, const std::filesystem::path& grader) {
    Subject zeroed = s;
    zeroed.report = s.report.parent_path() / (s.report.stem().string() + ".zero-filled.json");
    // Which checks pass is all it reads: no search, no catalogued mistake run beside them.
    run_step(zeroed, grader, {}, {}, 90,
             {asan_options(0), "HEADWISE_GRADE_SEARCH=off", "HEADWISE_GRADE_CATALOGUE=off"});
    auto other = read_report(zeroed.report);
    std::error_code ec;
    std::filesystem::remove(zeroed.report, ec);
    return other;
}

std::string fresh_memory_step(const Subject& s, const std::filesystem::path& grader,
                              std::future<std::optional<Report>>* begun) {
    auto report = read_report(s.report);
    if (!report || !report->compiled || !report->finished || report->all_passed() || !names_something(*report))
        return {};
    // A repair of their line that passes every check ran on the same pattern-filled memory: what
    // their code reads there did not decide a check (exercise 6: a second run of the kernels, 1.5 s).
    if (!report->repaired.empty() && !report->repaired_partly && report->still_failing.empty()) return {};
    const auto other = begun != nullptr && begun->valid() ? begun->get() : zero_filled_run(s, grader);
    if (!other || !other->finished ||
        (other->passed == report->passed && failing_tests(*other) == failing_tests(*report)))
        return {};
    report = read_report(s.report);  // as the transplant step may have left it
    if (!report) return {};
    for (Failure& f : report->failures) f.mistake.clear(), f.explanation.clear();
    if (!edit_is_their_line(*report, s.files.front())) report->edit.clear();
    const std::string said = fmt::format(
        "your results depend on what fresh memory holds: graded again with new memory filled with 0 bytes "
        "instead of 0xbe, {} of the {} tests pass instead of {}: your code reads memory it never wrote (an "
        "element of a tensor made with from_shape or xt::empty, read before it is set)",
        other->passed, other->total, report->passed);
    report->located = report->located.empty() ? said : said + ". Besides, " + report->located;
    write_report(s.report, *report);
    return said;
}

}  // namespace headwise::gradekit
