// gradekit/repair.cpp -- see repair.hpp.
#include "gradekit/repair.hpp"

#include "gradekit/mutants.hpp"
#include "gradekit/rebuild.hpp"
#include "gradekit/schemata.hpp"
#include "gradekit/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <future>
#include <functional>
#include <map>
#include <optional>
#include <ranges>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>
#include <vector>

namespace headwise::gradekit {

namespace {

using Checks = std::set<std::string>;

// One run of the repair grader with `selection` switched on (on the checks in `only`, when given).
struct RepairRun {
    bool ran = false;  // it finished and wrote its report (or stopped at a crash it reported: that check failed)
    int total = 0;
    Checks failing;
    std::map<std::string, double> seconds;  // each check's own time (Catch2's --durations), when asked
};

// Catch2's --durations lines: "0.123 s: the check's name".
std::function<void(const std::string&)> durations_into(std::map<std::string, double>& seconds) {
    return [&seconds](const std::string& line) {
        static const std::regex took_line(R"(^([0-9.]+) s: (.*)$)");
        if (std::smatch m; std::regex_match(line, m, took_line)) seconds[m[2]] = std::stod(m[1]);
    };
}

RepairRun run_selection(const Subject& s, const fs::path& grader, const fs::path& dir, const std::string& selection,
                        const fs::path& only, int timeout_s, const fs::path& probe = {}, int fill_byte = 190,
                        bool durations = false) {
    Subject v = s;
    v.report = dir / fmt::format("run_{}_{}.json", selection == "-1" ? "probe" : selection, fill_byte);
    std::vector<std::string> env = {"HEADWISE_GRADE_SEARCH=off", "HEADWISE_GRADE_CATALOGUE=off",
                                    "HEADWISE_REPAIR=" + selection, asan_options(fill_byte)};
    if (!probe.empty()) env.push_back("HEADWISE_REPAIR_PROBE=" + probe.string());
    std::vector<std::string> args;
    if (!only.empty()) args = {"-f", only.string()};
    RepairRun r;
    if (durations) args.insert(args.end(), {"--durations", "yes"});
    run_step(v, grader, args, durations ? durations_into(r.seconds) : nullptr, timeout_s, env);
    if (const auto report = read_report(v.report);
        report && report->compiled && (report->finished || !report->failures.empty())) {
        r.ran = true;
        r.total = report->total;
        r.failing = failing_tests(*report);
    }
    return r;
}

// What one edit does: the failing checks it makes pass (and, run on every check, whether it
// breaks one that passed).
struct Effect {
    const Variant* edit = nullptr;
    Checks fixes;
    Checks still_failing;  // after a run on every check
    bool confirmed = false;
};

// The ids the probe reached, in order.
std::vector<int> reached_ids(const fs::path& probe, const std::set<int>& kept) {
    std::ifstream in(probe);
    std::vector<int> ids;
    for (int id = 0; in >> id;)
        if (kept.contains(id)) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    return ids;
}

// What one edit's run said.
struct EachRun {
    int total = 0, passed = 0;
    int assertions = 0;  // the checks' assertions passed (run stopped at its first failure: how far it got)
    Checks failing;
    std::map<std::string, std::string> failures;  // each failing check -> its message and details
};

// A failure as the pair search compares two runs: its message and every line of its details.
std::string failure_text(const Failure& f) {
    std::string text = f.message;
    for (const auto& line : f.details) text += "\n" + line;
    return text;
}

// How run_each grades its selections.
struct EachHow {
    bool abort_first = false;  // each stops at its first failed check (Catch2's -a; what passed before it is known)
    bool stop = false;         // no more are started once one passes every check it runs
    int with = 0;              // (not 0) an edit on in every run beside its own
    std::chrono::steady_clock::time_point deadline;  // none runs past it
    int child_timeout_s = 0;                         // (not 0) each selection's own limit, for the default's
    int fill_byte = 190;  // fresh heap memory's byte (0: the runs of a fill left out, zeroed_slip)
    int per_child = 0;    // edits a child of the grader grades one after another (grade_main.cpp; 0: no limit)
    long cpu_ms = 0;      // (not 0) each selection's limit in CPU time, below its limit in time (edit_cpu_limit_ms)
};

// Where run_each's children write their reports: a fresh folder in memory (/dev/shm) where there is
// one, else dir/tag. Hundreds of small files created just after the last repair's were deleted cost
// ext4 more than the children's own work (its search for a free inode: a third of a screen's time).
struct ScratchReports {
    fs::path path;
    bool in_memory = false;
    ScratchReports(const fs::path& dir, const std::string& tag) {
        std::string templ = "/dev/shm/headwise-repair-XXXXXX";
        if (fs::is_directory("/dev/shm") && mkdtemp(templ.data()) != nullptr) {
            path = templ;
            in_memory = true;
        } else {
            path = dir / tag;
            std::error_code ec;
            fs::create_directories(path, ec);
        }
    }
    ~ScratchReports() {
        std::error_code ec;
        if (in_memory) fs::remove_all(path, ec);
    }
    ScratchReports(const ScratchReports&) = delete;
    ScratchReports& operator=(const ScratchReports&) = delete;
};

// The selections (an edit's id, or two joined by '+'), each graded on `checks` in a child of one
// grader process (grade_main.cpp's HEADWISE_REPAIR_EACH), their reports in a scratch folder. The
// selections that finished.
std::map<std::string, EachRun> run_each(const Subject& s, const RepairSetup& t, const fs::path& grader,
                                        const fs::path& dir, const std::string& tag,
                                        const std::vector<std::string>& checks, const std::vector<std::string>& ids,
                                        long timeout_ms, const EachHow& how) {
    std::map<std::string, EachRun> out;
    if (ids.empty()) return out;
    const ScratchReports reports(dir, tag);
    const fs::path only = dir / (tag + ".txt");
    write_check_list(only, checks);
    std::string list;
    for (const auto& id : ids) list += (list.empty() ? "" : ",") + id;
    Subject each = s;
    each.report = dir / (tag + ".json");
    std::vector<std::string> args = {"-f", only.string()};
    if (how.abort_first) args.push_back("-a");
    // An edit's first sanitizer report ends it: it repairs nothing (and needs no symbols, nor the
    // stacks of allocations). A small quarantine keeps the grader small, so that each child forked
    // from it copies less (fork's page copies were most of a repair's time), and no fake stacks
    // (stack-use-after-return): their fresh pages were half of a child's page faults. The repair
    // found is confirmed with every option (confirm).
    // Past its deadline run_step stops the grader with SIGABRT: no report is read from it, so it
    // dies at once (no handle_abort; its children die with it: grade_main.cpp) rather than in the
    // five seconds run_step grants a sanitizer report before SIGKILL.
    const std::string asan =
        replace_all(replace_all(replace_all(asan_options(how.fill_byte), "halt_on_error=0", "halt_on_error=1"),
                                "detect_stack_use_after_return=1", "detect_stack_use_after_return=0"),
                    "handle_abort=1", "handle_abort=0") +
        ":symbolize=0:malloc_context_size=0:quarantine_size_mb=16";
    run_step(
        each, grader, args, {},
        static_cast<int>(std::max<long>(
            1,
            std::chrono::duration_cast<std::chrono::seconds>(how.deadline - std::chrono::steady_clock::now()).count())),
        {"HEADWISE_GRADE_SEARCH=off", "HEADWISE_GRADE_CATALOGUE=off", "HEADWISE_REPAIR_EACH=" + list,
         "HEADWISE_REPAIR_REPORTS=" + reports.path.string(), fmt::format("HEADWISE_REPAIR_TIMEOUT_MS={}", timeout_ms),
         fmt::format("HEADWISE_REPAIR_JOBS={}", t.jobs), fmt::format("HEADWISE_REPAIR_STOP={}", how.stop ? 1 : 0),
         fmt::format("HEADWISE_REPAIR_WITH={}", how.with), fmt::format("HEADWISE_REPAIR_PER_CHILD={}", how.per_child),
         fmt::format("HEADWISE_REPAIR_CPU_MS={}", how.cpu_ms), asan});
    for (const auto& id : ids) {
        const auto report = read_report(reports.path / ("run_" + id + ".json"));
        if (!report || !report->compiled || !report->finished) continue;
        EachRun& run = out[id] = {report->total, report->passed, report->assertions_passed, failing_tests(*report), {}};
        for (const Failure& f : report->failures) run.failures[f.test] = failure_text(f);
    }
    return out;
}

// How many values a run's failures say differ: the sum of their "k of n values differ" (the
// grader's words for a tensor compared), or -1 when they say no such thing (scalars, a crash).
long differing_values(const ScreenedEdit& run) {
    static const std::regex counted(R"(([0-9]+) of [0-9]+ values differ)");
    long sum = -1;
    for (const auto& [check, text] : run.failures)
        for (auto it = std::sregex_iterator(text.begin(), text.end(), counted); it != std::sregex_iterator(); ++it)
            sum = std::max(sum, 0L) + std::stol((*it)[1]);
    return sum;
}

}  // namespace

// (repair.hpp)
std::string your_line(int number, const std::string& line, const std::vector<Variant>& variants) {
    const auto place = std::ranges::find(variants, number, &Variant::line);
    const std::string where = place != variants.end() && place->context.starts_with("in ") ? ", " + place->context : "";
    const auto first = line.find_first_not_of(" \t");
    return fmt::format("your line {} (`{}`{})", number, first == std::string::npos ? line : line.substr(first), where);
}

// (repair.hpp)
bool holds_mutable_statics(const std::string& text) {
    // A variable's declaration, not a function's: after the name comes `;`, `=`, `{`, `[` or a
    // constructor's `(...)` followed by `;`. Comments are read too: a false yes only costs time.
    // A kernel's __shared__ arrays are static on the emulator (exercise 6): what a launch left there
    // is the next launch's start, and a kernel that reads before it writes passed on one edit's leftovers.
    // They are zeroed between edits where the reader can find each (with_shared_kept).
    if (text.find("__shared__") != std::string::npos && !with_shared_kept(text)) return true;
    static const std::regex variable(
        R"(\b(?:static|thread_local)\s+(?!const\b|constexpr\b|constinit\b|inline\b|void\b)[\w:<>,\s*&]*?\b\w+\s*(?:[;=\[{]|\([^()]*\)\s*;))");
    return std::regex_search(text, variable);
}

// (repair.hpp)
bool writes_raw_memory(const std::string& text) {
    static const std::regex raw(
        R"(\.data\s*\(\s*\)|\b(?:memcpy|memset|memmove)\b|\bstd::(?:copy|copy_n|fill|fill_n|transform|generate|iota)\b|)"
        R"([^&]&\s*\w+\s*[\[(]|\b(?:float|double|int|char|unsigned|auto|size_t|\w+_t)\s*\*\s*(?:const\s+)?\w+\s*[=;,)])");
    return std::regex_search(text, raw);
}

std::vector<std::string> never_cleared(const std::string& text, const std::vector<Variant>& variants, bool made_only) {
    static const std::regex added(R"(([A-Za-z_]\w*)\s*(?:\[[^\]]*\]|\([^()]*(?:\([^()]*\)[^()]*)*\))+\s*\+=)");
    std::vector<std::string> lines;
    std::istringstream in(text);
    std::set<std::string> named;
    int number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        std::smatch m;
        if (!std::regex_search(line, m, added)) continue;
        const std::string name = m[1].str();
        if (named.contains(name)) continue;
        // Only the lines of the same function count as setting it (`out` is a name many functions use):
        // the lines its edits are on, by their place's words.
        const auto place = std::ranges::find(variants, number, &Variant::line);
        std::string function_text = text;
        if (place != variants.end() && place->context.starts_with("in ")) {
            const std::string function = place->context.substr(0, place->context.find(','));
            int first = number, last = number;
            for (const Variant& v : variants)
                if (v.context == function || v.context.starts_with(function + ",")) {
                    first = std::min(first, v.line);
                    last = std::max(last, v.line);
                }
            std::istringstream all(text);
            function_text.clear();
            int at = 0;
            for (std::string l; std::getline(all, l);)
                if (++at >= first && at <= last) function_text += l + "\n";
        }
        const std::regex set("\\b" + name + R"(\s*(?:\[[^\]]*\]|\([^()]*(?:\([^()]*\)[^()]*)*\))+\s*=[^=])" + "|\\b" +
                             name + R"(\s*\.\s*fill\s*\(|fill(?:_n)?\s*\(\s*)" + name + R"(\b|memset\s*\(\s*)" + name +
                             "\\b|\\b" + name + R"(\s*=\s*xt::zeros|vector<[^;]*>\s+)" + name + "\\b");
        if (std::regex_search(function_text, set)) continue;
        // Made with from_shape (or xt::empty) in that function: its elements hold whatever was there.
        const std::regex made("\\b" + name + R"(\s*=\s*[\w:<>]*(?:from_shape|empty)\b|\b)" + name +
                              R"(\s*\(\s*[\w:<>]*(?:from_shape|empty)\b)");
        std::string made_at;
        {
            std::istringstream all(text);
            int at = 0;
            for (std::string l; std::getline(all, l) && at < number;)
                if (++at < number && std::regex_search(l, made) && function_text.find(l + "\n") != std::string::npos)
                    made_at = fmt::format(", made with from_shape on your line {}", at);
        }
        if (made_only && made_at.empty()) continue;
        named.insert(name);
        lines.push_back(fmt::format("{} adds to `{}`{}", your_line(number, line, variants), name, made_at));
    }
    return lines;
}

// (repair.hpp)
std::optional<std::string> never_filled(const std::string& text, const std::string& name,
                                        const std::vector<Variant>& variants) {
    const std::regex made("\\b" + name + R"(\s*=\s*[\w:<>]*(?:from_shape|empty)\b)");
    const std::regex filled("\\b" + name + R"(\s*\.\s*fill\s*\(|fill(?:_n)?\s*\(\s*)" + name + "\\b|\\b" + name +
                            R"(\s*=\s*[\w:<>]*zeros\b)");
    if (std::regex_search(text, filled)) return std::nullopt;
    std::istringstream in(text);
    int number = 0;
    std::optional<std::string> found;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (!std::regex_search(line, made)) continue;
        if (found) return std::nullopt;  // made twice: which one is not known
        found = fmt::format("{} makes `{}` without filling it", your_line(number, line, variants), name);
    }
    return found;
}

// (repair.hpp)
int evidence_rank(const Variant& v) {
    if (v.kind == "an unused value put back") {
        const auto end = v.edited_line.find_last_not_of(" ;");
        return end != std::string::npos && end + 1 >= v.replacement.size() &&
                       v.edited_line.compare(end + 1 - v.replacement.size(), v.replacement.size(), v.replacement) == 0
                   ? 1
                   : 2;
    }
    static const std::set<std::string> shown = {
        "made like its twin",        "a reference for a copy",        "a divisor put back",
        "an offset put back",        "a tile cut at the end",         "an unused constant put back",
        "an unused member put back", "a block's start for its index", "a shift added back",
        "a count advanced",          "an unused value read",          "a reset put back beside its twin"};
    // One name of a twin line taken as the twin has it: after the rest of the evidence (a file of
    // parallel projections has dozens, and exercise 7's each run a real layer).
    if (v.kind == "a name like its twin's") return 2;
    return shown.contains(v.kind) ? 0 : -1;
}

namespace {

// Whether an edit leaves an operation doing nothing (`h * 1 < heads`, `h + 0 < heads` for `h + 1 <
// heads`): tried, and said, after the others, one of which may say it plainly (`h < heads`).
bool contrived(const Variant& v) {
    static const std::regex identity(R"((\*|/)\s*1(?![\w.])|[-+]\s*0(?![\w.]))");
    const auto identities = [](const std::string& line) {
        return std::distance(std::sregex_iterator(line.begin(), line.end(), identity), std::sregex_iterator());
    };
    return identities(v.edited_line) > identities(v.original_line);
}

// The order of edits the file points at: by evidence_rank (none, -1, last), then a factor put back
// where a value is stored before the same one put into each term of a sum (`w[j] = dot * scale;`
// before `dot += q * k * scale;` in the loop above it): the learner's line is the store.
std::tuple<unsigned, bool, bool, bool> evidence_order(const Variant& v) {
    // Then an edit that changes an operator or a bound before one that doubles, zeroes or drops
    // something: that more often makes up for a slip than undoes one.
    const bool blunt = v.kind.find("doubled") != std::string::npos ||
                       v.kind.find("replaced by 0") != std::string::npos || v.kind.ends_with("dropped") ||
                       v.kind == "a constant changed";
    return {static_cast<unsigned>(evidence_rank(v)), v.original_line.find("+=") != std::string::npos, contrived(v),
            blunt};
}

// An edit's place in the pair search's order, lower first (rank_edit_pairs).
std::pair<int, long> change_rank(const ScreenedEdit& theirs, long theirs_differing, const ScreenedEdit& e) {
    long fixed = 0, changed = 0;
    for (const auto& [check, text] : theirs.failures) {
        const auto found = e.failures.find(check);
        if (found == e.failures.end())
            ++fixed;
        else if (found->second != text)
            ++changed;
    }
    if (fixed > 0) return {0, -fixed};
    const long differing = differing_values(e);
    if (differing >= 0 && differing < theirs_differing) return {1, differing};
    return {changed > 0 ? 2 : 3, -changed};
}

// The failing checks in the order the grader ran them, in groups by the function they name first
// ("softmax_last_axis: ..."): a slip shows first in its own function's checks.
std::vector<std::vector<std::string>> failing_groups(const Report& r, const Checks& among) {
    std::vector<std::vector<std::string>> groups;
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const Failure& f : r.failures) {
        if (!among.contains(f.test) || !seen.insert(f.test).second) continue;
        const std::string function = f.test.substr(0, f.test.find(':'));
        const auto at = std::ranges::find(names, function);
        if (at == names.end()) {
            names.push_back(function);
            groups.push_back({f.test});
        } else {
            groups[static_cast<std::size_t>(at - names.begin())].push_back(f.test);
        }
    }
    return groups;
}

// "with `X` in place of your line 16 (`Y`, in softmax_row)"; a dropped statement: "without your
// line 16 (`Y`, in softmax_row)". `and`: the second of two ("and `X` in place of ...").
// `lead`: "with" for the first, "and" for the second of two, "so does" for another line that repairs
// the same ("so does `X` in place of ...", "so does dropping your line 16 (...)").
std::string edit_words(const Variant& v, bool and_ = false, std::string_view lead = "") {
    const std::string where = v.context.starts_with("in ") ? ", " + v.context : "";
    const std::string word = lead.empty() ? (and_ ? "and" : "with") : std::string(lead);
    if (v.kind == "statements moved earlier") {
        const std::string lines = v.moved_first == v.moved_last
                                      ? fmt::format("line {}", v.moved_first)
                                      : fmt::format("lines {}-{}", v.moved_first, v.moved_last);
        return fmt::format("{} your {} (`{}`){} before your line {} (`{}`{})", !lead.empty() ? word + " moving" : word,
                           lines, v.edited_line, lead.empty() ? " moved" : "", v.line, v.original_line, where);
    }
    if (v.kind == "a continue put back")
        return fmt::format("{} `continue;` at the end of the block of your line {} (`{}`{})",
                           !lead.empty() ? word + " putting" : word, v.line, v.original_line, where);
    if (v.kind == "statement dropped")
        return fmt::format("{} your line {} (`{}`{})",
                           !lead.empty() ? word + " dropping"
                           : and_        ? "and without"
                                         : "without",
                           v.line, v.original_line, where);
    const std::string lines =
        v.lines_last > v.line ? fmt::format("lines {}-{}", v.line, v.lines_last) : fmt::format("line {}", v.line);
    return fmt::format("{} `{}` in place of your {} (`{}`{})", word, v.edited_line, lines, v.original_line, where);
}

// "the check \"...\"", "the 3 failing checks of softmax_last_axis", "2 of the failing checks (\"...\", ...)".
std::string checks_words(const Checks& fixed, const Checks& failing) {
    if (fixed == failing) return fixed.size() == 1 ? "the failing check" : "every failing check";
    if (fixed.size() == 1) return fmt::format("the check \"{}\"", *fixed.begin());
    std::string function = fixed.begin()->substr(0, fixed.begin()->find(':'));
    const auto of_function = [&](const std::string& name) { return name.starts_with(function + ":"); };
    if (std::ranges::all_of(fixed, of_function) &&
        static_cast<std::size_t>(std::ranges::count_if(failing, of_function)) == fixed.size())
        return fmt::format("the {} failing checks of {}", fixed.size(), function);
    return fmt::format("{} of the failing checks (\"{}\", ...)", fixed.size(), *fixed.begin());
}

std::string pass_verb(const Checks& fixed, const Checks& failing) {
    return fixed.size() == 1 && fixed != failing ? "passes" : "pass";
}

// The failing checks among `among` that a run passed.
Checks fixed_by(const EachRun& run, const Checks& among) {
    Checks fixed;
    for (const auto& name : among)
        if (!run.failing.contains(name)) fixed.insert(name);
    return fixed;
}

// An edit's limit in the screens, where each runs the checks the learner failed: ten times their run
// and a fifth of a second more, three tenths at least, never more than `timeout_s` (the limit of every
// other run) -- nor less where that is longer than a second (their checks threw or crashed at
// once: a repair runs them far longer). Exercise 9's checks take milliseconds, and each of its
// endless loops (`p2 *= 1`) cost a whole second.
long edit_limit_ms(int timeout_s, double probe_s, const std::map<std::string, double>& check_s) {
    if (timeout_s > 1) return 1000L * timeout_s;
    // Their checks' own times where the report has them (probe_s then holds a process's start too).
    double checks = check_s.empty() ? probe_s : 0;
    for (const auto& [name, seconds] : check_s) checks += seconds;
    return std::min(1000L, std::max(300L, std::lround(10000 * checks) + 200));
}

// An edit's limit in CPU time: four times what the learner's failing checks took (their inputs and
// references made, their code run to the end; a repair's runs the same), a tenth of a second at
// least. An edit that loops (`D = x.shape()[6]`, a size read past the shape) is stopped when it has
// spent that, not at the limit in time, which must leave room for a loaded machine: the tenth
// trial's ex09_two_sign_b_slope_step screened its second slip's 214 edits in 5.2 s, 20 of them
// looping for 300 ms each, the other 194 in 0.1 s. Time waiting for a core is not CPU time, so a
// busy machine stops no repair early.
long edit_cpu_limit_ms(long edit_ms, const std::map<std::string, double>& check_s) {
    if (check_s.empty()) return 0;
    double checks = 0;
    for (const auto& [name, seconds] : check_s) checks += seconds;
    return std::min(edit_ms, std::max(100L, std::lround(4000 * checks) + 50));
}

// One repair, its state from the compiled schemata on: the edits the failing checks reach, how
// each is screened, run and confirmed, and the two searches (a first slip, a second beside it).
class Repair {
public:
    Repair(const Subject& s, const RepairSetup& t, const Report& report, const Mutants& m, RepairBuild built,
           fs::path dir, int timeout_s, double probe_s, std::map<std::string, double> check_s,
           std::chrono::steady_clock::time_point deadline, bool stopped_at_once)
        : s_(s),
          t_(t),
          report_(report),
          m_(m),
          built_(std::move(built)),
          dir_(std::move(dir)),
          failing_(failing_tests(report)),
          all_failing_(failing_.begin(), failing_.end()),
          timeout_s_(timeout_s),
          probe_s_(probe_s),
          check_s_(std::move(check_s)),
          deadline_(deadline),
          edit_ms_(edit_limit_ms(timeout_s, probe_s, check_s_)),
          // Their checks' times say nothing of a repair's where they stopped at once (a throw).
          edit_cpu_ms_(stopped_at_once ? 0 : edit_cpu_limit_ms(edit_ms_, check_s_)),
          // Without the sanitizers a stray write of one edit could show in the next ones' runs:
          // one edit a child unless every write is bound-checked (writes_raw_memory).
          per_child_(holds_mutable_statics(read_text(s.files.front())) ||
                             (!built_.sanitized && writes_raw_memory(read_text(s.files.front())))
                         ? 1
                         : 0) {}

    // The probe: nothing switched on, the failing checks alone; it must fail them as the learner's
    // code did, and it says which edits those checks reach.
    // Its limit is three seconds at least: one run, where a probe stopped at a second on a loaded
    // machine ran only part of its checks and ended the step (the tenth trial's
    // ex08_length_not_counted, its 0.3 s of checks, found in one regrade, lost in the next). Not
    // more than an edit's where that is longer: a probe that slow leaves the screens no time.
    bool probe(const fs::path& only) {
        const RepairRun probe = run_selection(s_, built_.executable, dir_, "-1", only, std::max(timeout_s_, 3),
                                              dir_ / "reached.txt", fill_byte_);
        if (!probe.ran || probe.failing != failing_) {
            if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr)
                fmt::print(stderr, "repair: the probe {} ({} of {} failing checks the learner's)\n",
                           probe.ran ? "failed otherwise" : "did not run to its end", probe.failing.size(),
                           failing_.size());
            if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr)
                for (const auto& name : failing_)
                    if (!probe.failing.contains(name)) fmt::print(stderr, "repair:   passes there: {}\n", name);
            return false;
        }
        ids_ = reached_ids(dir_ / "reached.txt", built_.kept);
        return true;
    }

    // Group by group: every edit the group's failing checks reach screened on them, each stopping at
    // its first failure (cheap: most edits break at once), until one passes them all; those that got
    // further, run on every failing check; those that fix something, on every check. Returns the
    // sentence of an edit that repairs everything, else empty, with the confirmed repairs of part
    // in `parts` (the most checks first).
    // `pairs`: a second slip is looked for (no catalogued mistake reproduces every check).
    std::string first_slip(std::vector<Effect>& parts, const std::function<void(const std::string&)>& phase,
                           bool pairs = true) {
        const auto groups = failing_groups(report_, failing_);
        std::set<int> measured;
        int confirmed = 0;
        for (std::size_t g = 0; g < groups.size() && !late(); ++g) {
            auto reached = reached_in_time(groups[g], fmt::format("group{}", g));
            // Too slow for every edit: the few the file points at, as first slips only (the pair
            // searches after it would pair them for as long again: exercise 7, 5-8 s for nothing).
            const bool only_evidence = !reached && (reached = evidence_in_time(groups[g]));
            if (only_evidence)
                phase(fmt::format("group {}: too slow for every edit, its {} the file points at screened", g + 1,
                                  reached->size()));
            if (!reached) {
                phase(fmt::format("group {}: its edits would not be screened in time: skipped", g + 1));
                continue;
            }
            std::vector<int> left = std::move(*reached);
            evidence_first(left);
            screened_.push_back({groups[g], {}, std::nullopt});
            // The learner's own code (0) screened beside the first round: how far it gets into the
            // group's first failing check is the measure of an edit that gets further (advancing_pair).
            left.insert(left.begin(), 0);
            for (int round = 0; !left.empty() && !late(); ++round) {
                // Screened until one edit passes all of the group's checks (the rest, if it is no repair).
                auto screen = each(fmt::format("screen{}_{}", g, round), groups[g], left, true, true);
                std::erase_if(left, [&](int id) { return screen.contains(id); });
                if (const auto own = screen.find(0); own != screen.end()) {
                    screened_.back().theirs = own->second;
                    screen.erase(own);
                }
                std::erase(left, 0);
                if (screen.empty()) break;
                screened_.back().runs.insert(screen.begin(), screen.end());
                std::vector<int> promising;
                for (const auto& [id, run] : screen)
                    if (run.passed > 0 && measured.insert(id).second) promising.push_back(id);
                std::vector<Effect> batch;
                // A repair runs every check to its end (exercise 12's model, its five decode steps:
                // 5 s, where the learner's run failed at the first in 1.5 s): the longer limit. As
                // few as run at once go straight to their confirmation, which runs every check too.
                if (promising.size() <= static_cast<std::size_t>(std::max(1, t_.jobs))) {
                    for (const int id : promising) {
                        // The line of a part already confirmed, another way with the same screen
                        // (`position * 1`, `position + 0`, `position` for `position + 1`): not
                        // confirmed again -- exercise 12's confirm runs the model, 1.6 s each, and
                        // each such round found one more. Where checks take milliseconds every one
                        // is confirmed: the screen runs the group's checks only, and on those
                        // `std::max` looked like the `c = 3` that mended one check of two (the sixth
                        // trial's ex01_peak_min, lost while every edit of the line was skipped).
                        const auto same_as_part = [&](const Effect& p) {
                            if (probe_s_ < 0.5 || p.edit->line != edit_of(id)->line) return false;
                            const auto& runs = screened_.back().runs;
                            const auto mine = runs.find(id), theirs = runs.find(p.edit->id);
                            return mine != runs.end() && theirs != runs.end() &&
                                   mine->second.assertions == theirs->second.assertions &&
                                   mine->second.failures == theirs->second.failures;
                        };
                        if (std::ranges::any_of(parts, same_as_part)) continue;
                        Effect e{edit_of(id), {}, {}, false};
                        if (!confirm(std::to_string(id), &e.still_failing)) continue;
                        for (const auto& name : failing_)
                            if (!e.still_failing.contains(name)) e.fixes.insert(name);
                        e.confirmed = !e.fixes.empty();
                        if (e.confirmed) batch.push_back(std::move(e));
                    }
                } else {
                    for (const auto& [id, run] : each(fmt::format("fix{}_{}", g, round), all_failing_, promising,
                                                      {false, false, 0, deadline_, whole_run_s()}))
                        if (Checks fixes = fixed_by(run, failing_); run.total == int(failing_.size()) && !fixes.empty())
                            batch.push_back({edit_of(id), std::move(fixes), {}, false});
                }
                std::stable_sort(batch.begin(), batch.end(), most_fixes);
                phase(fmt::format(
                    "group {}, round {}: {} edits screened ({} a child), {} got further, {} fix something", g + 1,
                    round + 1, screen.size(), per_child_ == 0 ? "all" : "one", promising.size(), batch.size()));
                for (Effect& e : batch) {
                    if (!e.confirmed && e.fixes != failing_ && confirmed >= 4) continue;
                    ++confirmed;
                    e.confirmed = e.confirmed || confirm(std::to_string(e.edit->id), &e.still_failing);
                    if (e.confirmed && e.still_failing.empty()) {
                        // Every line that repairs it, one that puts back what was left out first (the
                        // bias term missing from out_proj's count, not in_proj's counted 4 times).
                        std::vector<const Variant*> all = {e.edit};
                        if (probe_s_ < 2.5)
                            std::ranges::copy(alternatives(e, groups[g], left, screen), std::back_inserter(all));
                        std::ranges::stable_sort(all, std::less<>(),
                                                 [](const Variant* v) { return !v->kind.ends_with("put back"); });
                        named_ = all.front();
                        std::string sentence = fmt::format("found by repairing your code: {}, every check passes",
                                                           edit_words(*all.front()));
                        for (std::size_t a = 1; a < all.size(); ++a)
                            sentence += "; " + edit_words(*all[a], false, "so does");
                        return sentence;
                    }
                    if (e.confirmed) parts.push_back(e);
                }
            }
            if (pairs && parts.empty() && !only_evidence && groups[g].size() >= 2 && !late())
                other_checks_parts(groups[g], parts, phase);
            if (only_evidence) screened_.pop_back();
            // A repair of part: what it leaves failing is screened with it on (second_slip), not alone.
            if (!parts.empty()) break;
        }
        std::stable_sort(parts.begin(), parts.end(), most_fixes);
        if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr)
            for (const Effect& e : parts)
                fmt::print(stderr, "repair: part: {} fixes {}, {} still fail\n", edit_words(*e.edit), e.fixes.size(),
                           e.still_failing.size());
        return "";
    }

    // Where no edit gets past the group's first failing check -- one slip there, another in every
    // check -- its other checks are screened each alone, the last first: an edit that passes one may repair part (exercise
    // 8's value cache written from the keys beside a query head read from kvh: every check but the
    // hand-worked one mends with the value's line), and second_slip looks for the rest beside it.
    void other_checks_parts(const std::vector<std::string>& checks, std::vector<Effect>& parts,
                            const std::function<void(const std::string&)>& phase) const {
        std::vector<int> ids;
        for (const auto& [id, run] : screened_.back().runs) ids.push_back(id);
        evidence_first(ids);
        // The last check first, then the others back to the second, until one gives a repair of part
        // (exercise 1's self-attention check, which a scale's slip alone fails where the key count's
        // slip shows only in the checks with N_q != N_k around it).
        const auto began = std::chrono::steady_clock::now();
        for (std::size_t c = checks.size(); c-- > 1 && parts.empty() && !late();) {
            // A slow check (exercise 7's real layer, 0.3 s) over hundreds of edits is not waited for:
            // 7 s for nothing in the seventh trial. Three seconds in all at most: what the screens took,
            // and what this one would by the learner's own run (a quarter of it an edit, as
            // reached_in_time reckons: most edits stop at their first failure).
            const auto took = check_s_.find(checks[c]);
            const double cost =
                took == check_s_.end() ? 0 : took->second * double(ids.size()) / std::max(1, t_.jobs) / 4;
            const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
            if (spent + cost > 3.0) {
                phase(fmt::format("the group's check {} alone: {:.2f} s a run, not screened", c + 1, took->second));
                continue;
            }
            const auto screen = each(fmt::format("check{}_alone", c), {checks[c]}, ids, true, false);
            std::vector<int> passing;
            for (const auto& [id, run] : screen)
                if (run.failing.empty() && run.total == 1) passing.push_back(id);
            evidence_first(passing);
            phase(fmt::format("the group's check {} alone: {} screened, {} pass it", c + 1, screen.size(),
                              passing.size()));
            for (std::size_t k = 0; k < std::min<std::size_t>(4, passing.size()) && !late(); ++k) {
                Effect e{edit_of(passing[k]), {}, {}, false};
                if (!confirm(std::to_string(passing[k]), &e.still_failing)) continue;
                for (const auto& name : failing_)
                    if (!e.still_failing.contains(name)) e.fixes.insert(name);
                // One check is enough to look for the rest beside it (exercise 1's scale beside its key
                // count), but a repair of one check alone of three or more is not said (exercise 6's
                // `active = N < N`, no row at all, passes one): only what repairs the rest with it.
                e.confirmed = !e.fixes.empty() && !e.still_failing.empty();
                if (e.confirmed) parts.push_back(std::move(e));
            }
        }
    }

    // The other repairs of everything, on other lines (said as "; so does `...` in place of your
    // line 52 (...)"): a slip where a value is made and where it is used (`s / scale` for
    // `s * scale`) is repaired at either line, and the first found is not always the learner's. The
    // edits not yet screened are screened for it (a second or two at most), the first two that pass
    // the group's checks confirmed -- not where the failing checks take seconds (a real model's:
    // each confirmation runs it to its end twice, 10 s).
    std::vector<const Variant*> alternatives(const Effect& found, const std::vector<std::string>& checks,
                                             const std::vector<int>& left,
                                             const std::map<int, EachRun>& screened) const {
        std::vector<int> passing;
        for (const auto& [id, run] : screened)
            if (id != found.edit->id && run.failing.empty() && run.total == int(checks.size())) passing.push_back(id);
        // The edits of lines that name what the found line names first (`scale`, made on one line and
        // used on another): the two seconds may not reach the rest.
        static const std::regex word(R"([A-Za-z_]\w*)");
        std::set<std::string> names;
        const std::string& line = found.edit->original_line;
        for (std::sregex_iterator w(line.begin(), line.end(), word), end; w != end; ++w)
            if (w->length() > 1 && w->str() != "const" && w->str() != "float" && w->str() != "std" &&
                w->str() != "double" && w->str() != "size_t" && w->str() != "auto" && w->str() != "for")
                names.insert(w->str());
        std::vector<int> order = left;
        std::ranges::stable_partition(order, [&](int id) {
            const std::string& other = edit_of(id)->original_line;
            for (std::sregex_iterator w(other.begin(), other.end(), word), end; w != end; ++w)
                if (names.contains(w->str())) return true;
            return false;
        });
        const auto now = std::chrono::steady_clock::now();
        for (const auto& [id, run] :
             each("alternatives", checks, order, {true, false, 0, std::min(deadline_, now + std::chrono::seconds(2))}))
            if (run.failing.empty() && run.total == int(checks.size())) passing.push_back(id);
        if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr)
            fmt::print(stderr, "repair: alternatives: {} left, {} pass the group's checks\n", left.size(),
                       passing.size());
        std::vector<const Variant*> said;
        std::set<int> lines = {found.edit->line};
        for (const int id : passing) {
            const Variant* v = edit_of(id);
            if (lines.size() > 2 || lines.contains(v->line)) continue;
            Checks still;
            const bool confirmed = confirm(std::to_string(id), &still) && still.empty();
            if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr)
                fmt::print(stderr, "repair: alternative {} (line {}): {}\n", id, v->line,
                           confirmed ? "confirmed" : "not confirmed");
            if (confirmed) {
                lines.insert(v->line);
                said.push_back(v);
            }
        }
        return said;
    }

    // With `first` repaired, every other edit screened on what still fails: two edits that together
    // pass every check, each named with the checks it repairs; else empty. Only what passes every
    // check is said: an edit that repairs part may only hide the slip (the shift dropped from both
    // exp()s, where one lacked it, passes all but the large scores).
    // Of `ids`, screened on `checks` with the first slip's repair kept on, the edit that with it
    // passes every check (confirmed), the one that fixes most of what the first left failing; or
    // nullptr. `fixes`: the checks it fixes.
    const Variant* second_among(const Effect& first, const std::vector<std::string>& checks,
                                const std::vector<int>& ids, const std::string& tag,
                                const std::function<void(const std::string&)>& phase, Checks& fixes) const {
        if (ids.empty()) return nullptr;
        const auto screen = each(tag, checks, ids, true, false, first.edit->id);
        std::vector<int> promising;
        for (const auto& [id, run] : screen)
            if (run.passed > 0) promising.push_back(id);
        phase(fmt::format("{}: {} screened, {} got further", tag, screen.size(), promising.size()));
        const Variant* second = nullptr;
        for (const auto& [id, run] :
             each(tag + "_fix", all_failing_, promising, {false, false, first.edit->id, deadline_, whole_run_s()})) {
            Checks fixed = fixed_by(run, first.still_failing), both;
            const bool confirmed = run.total == int(failing_.size()) && fixed.size() > fixes.size() &&
                                   confirm(fmt::format("{},{}", first.edit->id, id), &both) && both.empty();
            if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr)
                fmt::print(stderr, "repair: second slip {}: {} of {} checks ran, fixes {}, {}\n",
                           edit_words(*edit_of(id)), run.total, failing_.size(), fixed.size(),
                           confirmed ? "confirmed" : "not confirmed");
            if (confirmed) second = edit_of(id), fixes = std::move(fixed);
        }
        return second;
    }

    std::string second_slip(const Effect& first, const std::function<void(const std::string&)>& phase) {
        const Checks& rest = first.still_failing;
        const auto groups = failing_groups(report_, rest);
        for (std::size_t g = 0; g < groups.size() && !late(); ++g) {
            const auto reached = reached_in_time(groups[g], fmt::format("second_group{}", g));
            if (!reached) {
                phase(fmt::format("second slip, group {}: its edits would not be screened in time: skipped", g + 1));
                continue;
            }
            std::vector<int> others;
            for (const int id : *reached)
                if (edit_of(id)->region != first.edit->region) others.push_back(id);
            // The edits the file points at first, alone: one that is confirmed saves the screen of
            // the rest (exercise 6's tiled checks on the emulator: 12 s); where none is (a twin's
            // `shape()[1]` passes the refusal of a full cache by making it smaller), the rest.
            std::vector<int> pointed;
            std::ranges::copy_if(others, std::back_inserter(pointed),
                                 [&](int id) { return evidence_rank(*edit_of(id)) == 0; });
            std::erase_if(others, [&](int id) { return evidence_rank(*edit_of(id)) == 0; });
            Checks second_fixes;
            const Variant* second =
                second_among(first, groups[g], pointed, fmt::format("second_pointed{}", g), phase, second_fixes);
            if (second == nullptr && !late())
                second = second_among(first, groups[g], others, fmt::format("second_screen{}", g), phase, second_fixes);
            if (second == nullptr) continue;
            const std::string fixed =
                second_fixes == rest
                    ? (rest.size() == 1 ? std::string("the other failing check passes too")
                                        : fmt::format("the other {} failing checks pass too", rest.size()))
                    : checks_words(second_fixes, rest) + " " + pass_verb(second_fixes, rest) + " too";
            return fmt::format("found by repairing your code: {}, {} {}; with that {}, {}: every check passes",
                               edit_words(*first.edit), checks_words(first.fixes, failing_),
                               pass_verb(first.fixes, failing_), edit_words(*second, true), fixed);
        }
        return "";
    }

    // The second slip beside each of the first three repairs of part: one may make up for the slip
    // rather than undo it (`geometric(2 * p2)`, made like its twin, for the loop bound `p2 * 2 <
    // heads`), and then nothing completes it. The second and third only in the step's first 21 s
    // (from `began`): each screens every edit again, 4-5 s on exercise 6's kernels, where the
    // first alone took the grade to 26 s; exercise 9's second, which finds its bound, starts at 20 s.
    std::string second_slip_beside(const std::vector<Effect>& parts, std::chrono::steady_clock::time_point began,
                                   const std::function<void(const std::string&)>& phase) {
        std::string sentence;
        for (std::size_t k = 0; k < std::min<std::size_t>(3, parts.size()) && sentence.empty(); ++k)
            if (k == 0 || std::chrono::steady_clock::now() - began < std::chrono::seconds(21))
                sentence = second_slip(parts[k], phase);
        return sentence;
    }

    // Repairs of part and nothing that repairs the rest (a slip no single edit undoes: a line
    // missing, two tokens wrong): the repairs are named each with the checks it makes pass -- the
    // first, then each other one that repairs other checks, confirmed together -- and what still
    // fails is said, so that the learner has the place of one slip and knows another is left.
    //
    // Not when a catalogued mistake reproduces every check (its name is the precise one), nor for a
    // repair of one check among three or more failing: one small case (d_head = 1, where a scale of
    // 1 is right) is easily passed by an edit that hides the slip rather than undoes it.
    // The checks the repair of part (partial) left failing.
    const std::vector<std::string>& still_failing() const { return still_failing_; }

    std::string partial(const std::vector<Effect>& all) {
        // An edit that drops something, or replaces a computed value by 0, mends some checks by
        // taking the rest out of play (`m_new = 0.0f` for a running maximum: no rescale is then
        // missed) -- it hides the other slip rather than locates one.
        std::vector<Effect> parts;
        std::ranges::copy_if(all, std::back_inserter(parts), [](const Effect& e) {
            const Variant& v = *e.edit;
            const bool zeroed = v.kind == "a constant changed" && (v.replacement == "0.0f" || v.replacement == "0.0") &&
                                v.end - v.begin > 6;
            return !zeroed && !v.kind.ends_with("dropped");
        });
        if (parts.empty() || std::ranges::any_of(report_.failures, [](const Failure& f) { return !f.mistake.empty(); }))
            return "";
        if (parts.front().fixes.size() == 1 && failing_.size() >= 3) return "";
        // Nor one that mends only some of a function's failing checks: the hand-worked cases alone
        // (`std::min` for `std::max` in a softmax whose last line forgot the shift) make up for a slip
        // elsewhere rather than undo one. A slip of its own mends every check of its function.
        const auto whole_function = [&](const Checks& fixes) {
            return std::ranges::any_of(fixes, [&](const std::string& name) {
                const std::string function = name.substr(0, name.find(':')) + ":";
                return std::ranges::all_of(
                    failing_, [&](const std::string& c) { return !c.starts_with(function) || fixes.contains(c); });
            });
        };
        // Or one that mends most of them (the scale of an exercise with one function, whose other
        // slip fails a check or two), or whose checks still failing each stop at a line of the
        // learner's they name (a throw at their line 59: the other slip, located by it).
        const bool most = 2 * parts.front().fixes.size() > failing_.size();
        const bool rest_located = std::ranges::all_of(parts.front().still_failing, [&](const std::string& c) {
            const auto f = std::ranges::find(report_.failures, c, &Failure::test);
            return f != report_.failures.end() && !f->where.empty();
        });
        if (!whole_function(parts.front().fixes) && !most && !rest_located) return "";
        std::vector<const Effect*> kept = {&parts.front()};
        Checks still = parts.front().still_failing, fixed = parts.front().fixes;
        const auto keep_still = [&] { still_failing_ = {still.begin(), still.end()}; };
        std::string selection = std::to_string(parts.front().edit->id);
        for (std::size_t k = 1; k < parts.size() && !late(); ++k) {
            const Effect& e = parts[k];
            if (std::ranges::any_of(kept, [&](const Effect* x) { return x->edit->region == e.edit->region; }) ||
                std::ranges::any_of(e.fixes, [&](const std::string& c) { return fixed.contains(c); }))
                continue;
            Checks both;
            const std::string with = selection + "," + std::to_string(e.edit->id);
            if (!confirm(with, &both) || both.size() >= still.size() ||
                !std::includes(still.begin(), still.end(), both.begin(), both.end()))
                continue;
            kept.push_back(&e), selection = with, still = both;
            fixed.insert(e.fixes.begin(), e.fixes.end());
        }
        keep_still();
        std::string said = "found by repairing your code: ";
        for (std::size_t k = 0; k < kept.size(); ++k)
            said += fmt::format("{}{}, {} {}", k == 0 ? "" : "; ", edit_words(*kept[k]->edit, k > 0),
                                checks_words(kept[k]->fixes, failing_), pass_verb(kept[k]->fixes, failing_));
        const std::string function = still.begin()->substr(0, still.begin()->find(':'));
        const bool one_function =
            std::ranges::all_of(still, [&](const std::string& c) { return c.starts_with(function + ":"); });
        if (const std::string cleared = never_cleared_words(still); !cleared.empty())
            return said + fmt::format("; {} still fail{}: {}",
                                      still.size() == 1 ? fmt::format("the check \"{}\"", *still.begin())
                                      : one_function    ? fmt::format("the {} checks of {}", still.size(), function)
                                                        : fmt::format("{} checks", still.size()),
                                      still.size() == 1 ? "s" : "", cleared);
        // Each stopped at a line of theirs (the grader's own words above say what happened there).
        std::set<std::string> stops;
        for (const std::string& c : still) {
            const auto f = std::ranges::find(report_.failures, c, &Failure::test);
            if (f == report_.failures.end() || f->where.empty()) break;
            stops.insert(f->where.substr(f->where.rfind(':') + 1));
        }
        if (stops.size() == 1 && std::ranges::all_of(still, [&](const std::string& c) {
                const auto f = std::ranges::find(report_.failures, c, &Failure::test);
                return f != report_.failures.end() && !f->where.empty();
            }))
            return said + fmt::format("; {} still fail{}, each stopped at your line {} (above)",
                                      still.size() == 1 ? fmt::format("the check \"{}\"", *still.begin())
                                      : one_function    ? fmt::format("the {} checks of {}", still.size(), function)
                                                        : fmt::format("{} checks", still.size()),
                                      still.size() == 1 ? "s" : "", *stops.begin());
        return said + fmt::format(
                          "; {} still fail{}: another slip, which no single edit tried on your lines undoes (a "
                          "line or a term missing, two tokens wrong?)",
                          still.size() == 1 ? fmt::format("the check \"{}\"", *still.begin())
                          : one_function    ? fmt::format("the {} checks of {}", still.size(), function)
                                            : fmt::format("{} checks", still.size()),
                          still.size() == 1 ? "s" : "");
    }

    // When the checks in `among` say memory never set was added in (the grader's "added (+=) to
    // elements never set"), the lines of the learner's file that add into something it never
    // sets: "they add memory never set: your line 72 (...) adds to `oh`, which nothing in your file
    // sets first (a fill or a zeroing left out?)"; else empty.
    std::string never_cleared_words(const Checks& among) const {
        const auto said = [&](const std::string& words) {
            return std::ranges::any_of(report_.failures, [&](const Failure& f) {
                const auto has = [&](const std::string& x) { return x.find(words) != std::string::npos; };
                return among.contains(f.test) && (has(f.message) || std::ranges::any_of(f.details, has));
            });
        };
        if (s_.files.empty()) return "";
        // "weights: first differs ... elements read or returned before they were ever written": the
        // tensor the learner made with from_shape and wrote in part (a skipped key's weight).
        if (said("elements read or returned before they were ever written")) {
            static const std::regex output(R"(([A-Za-z_]\w*): first differs)");
            std::set<std::string> names;
            for (const Failure& f : report_.failures) {
                std::smatch m;
                if (among.contains(f.test) && std::regex_search(f.message, m, output)) names.insert(m[1].str());
            }
            std::vector<std::string> lines;
            for (const std::string& name : names)
                if (auto line = never_filled(read_text(s_.files.front()), name, m_.variants)) lines.push_back(*line);
            if (lines.size() == 1)
                return fmt::format(
                    "they read memory never written: {}, and some of its elements are never written (a fill "
                    "left out, or a loop that skips them?)",
                    lines.front());
        }
        // Without the grader's words only a tensor made with from_shape is known unset (a pointer's
        // memory may be the caller's, zeroed).
        const auto lines =
            never_cleared(read_text(s_.files.front()), m_.variants, !said("added (+=) to elements never set"));
        if (lines.empty() || lines.size() > 2) return "";
        return fmt::format(
            "they add in memory never set: {}, which nothing in your file sets first (a fill or a "
            "zeroing left out?)",
            lines.size() == 1 ? lines.front() : lines.front() + " and " + lines.back());
    }

    // The lines that add into memory never set, where the failing checks show it (never_cleared_words).
    std::string fill_left_out() const { return never_cleared_words(failing_); }

    // No repair at all, and every failing check says memory never set was added in: the lines
    // that add into what the file never sets (never_cleared_words), or empty.
    std::string only_never_cleared() const {
        const std::string words = never_cleared_words(failing_);
        return words.empty() ? "" : "found by reading your code: the failing checks " + words.substr(5);  // "they "
    }

    // Two slips that fail the same checks, where one of them is repaired by an edit that takes the
    // checks further: screened, the run passes more assertions of the first failing check before it
    // stops (the weights right now, the output still wrong -- a wrong value index after a wrong
    // maximum). Each such edit, the furthest first (at most three; eight where the learner's first
    // failing check threw, each edit that stops the throw counted further), is kept on while every other
    // edit is screened on the group's checks; a pair that passes them must pass every check
    // (confirm). Cheaper than the blind pair search (one screen per edit kept, not a run per pair),
    // and it needs no edit to pass a whole check alone.
    std::string advancing_pair(const std::function<void(const std::string&)>& phase) {
        for (std::size_t g = 0; g < screened_.size() && !late(); ++g) {
            const Screened& group = screened_[g];
            if (!group.theirs) continue;
            std::vector<std::pair<int, int>> further;  // (assertions passed, id)
            // Where the learner's first failing check threw, an edit after which it fails without
            // throwing gets further too, and first (an empty range no longer projected: the check
            // now reaches the value cache).
            const auto threw = [&](const EachRun& r) {
                const auto f = r.failures.find(group.checks.front());
                return f != r.failures.end() && f->second.find("threw an exception") != std::string::npos;
            };
            for (const auto& [id, run] : group.runs) {
                if (run.passed != group.theirs->passed) continue;
                if (threw(*group.theirs) && run.failures.contains(group.checks.front()) && !threw(run))
                    further.emplace_back(run.assertions + 1'000'000, id);
                else if (run.assertions > group.theirs->assertions)
                    further.emplace_back(run.assertions, id);
            }
            std::ranges::sort(further, std::greater{});
            // (Many edits stop a throw, each differently: up to eight of those.)
            const std::size_t cap = threw(*group.theirs) ? 8 : 3;
            if (further.size() > cap) further.resize(cap);
            phase(fmt::format("advancing, group {}: {} edits get further{}", g + 1, further.size(),
                              threw(*group.theirs) ? " (their first check threw)" : ""));
            for (const auto& [assertions, first] : further) {
                std::vector<int> others;
                for (const auto& [id, run] : group.runs)
                    if (edit_of(id)->region != edit_of(first)->region) others.push_back(id);
                // With it on the checks run further, into lines they never reached: the edits the
                // file points at there too (the value cache filled with the keys, after a
                // projection of an empty range that threw).
                for (const int id : built_.kept)
                    if (!group.runs.contains(id) && evidence_rank(*edit_of(id)) == 0 &&
                        edit_of(id)->region != edit_of(first)->region)
                        others.push_back(id);
                const auto screen =
                    each(fmt::format("advancing{}_{}", g, first), group.checks, others, true, true, first);
                phase(fmt::format("advancing, group {}: {} screened with edit {} on", g + 1, screen.size(), first));
                for (const auto& [id, run] : screen) {
                    Checks still;
                    if (run.failing.empty() && run.total == int(group.checks.size()) &&
                        confirm(fmt::format("{},{}", first, id), &still) && still.empty()) {
                        const auto [a, b] =
                            edit_of(first)->line < edit_of(id)->line ? std::pair{first, id} : std::pair{id, first};
                        return pair_sentence(a, b, group.checks);
                    }
                }
                if (late()) break;
            }
        }
        return "";
    }

    // Two slips that fail the same checks, each undone by an edit made from what the learner's own
    // file shows (evidence_rank): a value computed and never used, a line written unlike its twin.
    // These few are paired with each other before the blind pair search's hundreds: the pairs
    // screened on the group's checks, one that passes them confirmed on every check.
    std::string evidence_pair(const std::function<void(const std::string&)>& phase) {
        for (std::size_t g = 0; g < screened_.size() && !late(); ++g) {
            std::vector<std::pair<int, int>> ranked;  // (rank, id)
            for (const auto& [id, run] : screened_[g].runs)
                if (const int rank = evidence_rank(*edit_of(id)); rank >= 0) ranked.emplace_back(rank, id);
            std::ranges::stable_sort(ranked, std::less<>(), [](const auto& r) { return r.first; });
            // Pairs by the sum of their ranks, then of their places: the likeliest first.
            std::vector<std::tuple<int, std::size_t, int, int>> order;
            for (std::size_t i = 0; i < ranked.size(); ++i)
                for (std::size_t j = i + 1; j < ranked.size(); ++j) {
                    const Variant* a = edit_of(ranked[i].second);
                    const Variant* b = edit_of(ranked[j].second);
                    if (a->region == b->region || a->line == b->line) continue;
                    order.emplace_back(ranked[i].first + ranked[j].first, i + j, std::min(a->id, b->id),
                                       std::max(a->id, b->id));
                }
            std::ranges::sort(order);
            std::vector<std::pair<int, int>> pairs;
            for (const auto& [rank, place, a, b] : order) {
                if (pairs.size() >= t_.max_pairs) break;
                pairs.emplace_back(a, b);
            }
            // Then each edit the checks reached with one the file points at that they did not reach:
            // a slip that stops the checks early (an empty view thrown at, a crash) hides the line
            // of the other (the value cache filled after the projection that threw).
            // At most 60 of these: a pair whose first edit leaves the slip that stops the checks runs
            // into code no check reached before (a crash's pairs took 20 s at 300).
            // A value computed and never read put back at the end of its statement (rank 1: the
            // compiler's unused-variable warning) counts too: exercise 8's `w[j] = dot * scale;`,
            // in a loop over the cached keys the count never advanced left empty.
            const std::size_t reached_pairs = pairs.size();
            std::vector<int> unreached;
            for (const int u : built_.kept)
                if (const int rank = evidence_rank(*edit_of(u));
                    !screened_[g].runs.contains(u) && rank >= 0 && rank <= 1)
                    unreached.push_back(u);
            std::ranges::stable_sort(unreached, std::less<>(), [&](int u) { return evidence_order(*edit_of(u)); });
            // With the reached edits the file points at first (the count put back), then the rest.
            std::vector<int> partners;
            for (const auto& [rank, id] : ranked) partners.push_back(id);
            for (const auto& [id, run] : screened_[g].runs)
                if (evidence_rank(*edit_of(id)) < 0) partners.push_back(id);
            for (const bool pointed : {true, false})
                for (const int u : unreached)
                    for (std::size_t p = pointed ? 0 : ranked.size(); p < (pointed ? ranked.size() : partners.size());
                         ++p) {
                        const Variant *a = edit_of(partners[p]), *b = edit_of(u);
                        if (pairs.size() < std::min(t_.max_pairs, reached_pairs + 60) && a->region != b->region &&
                            a->line != b->line)
                            pairs.emplace_back(std::min(a->id, u), std::max(a->id, u));
                    }
            phase(fmt::format("evidence, group {}: {} edits, {} pairs to try", g + 1, ranked.size(), pairs.size()));
            if (pairs.empty()) continue;
            if (const auto found = repairing_pair(g, pairs, phase, "evidence")) {
                const auto [a, b] = edit_of(found->first)->line < edit_of(found->second)->line
                                        ? *found
                                        : std::pair{found->second, found->first};
                return pair_sentence(a, b, screened_[g].checks);
            }
        }
        return "";
    }

    // Two slips that fail the same checks: no edit alone repairs them. Group by group, the edits
    // first_slip screened there (none that crashed) are run alone on the group's quick checks and
    // paired by what each changed (rank_edit_pairs); the pairs are screened together on the group's
    // checks, and one that passes them must pass every check (confirm).
    std::string slip_pair(const std::function<void(const std::string&)>& phase) {
        deadline_ = std::min(deadline_, std::chrono::steady_clock::now() + std::chrono::seconds(t_.pair_budget_s));
        for (std::size_t g = 0; g < screened_.size() && !late(); ++g) {
            const std::vector<std::string>& checks = screened_[g].checks;
            // Each edit is run alone before any pair: past a few hundred, that run alone takes the
            // budget (ex04's 642 edits: 11 s) and pairs of so many are too many to rank well.
            if (screened_[g].runs.size() > t_.max_paired_edits) continue;
            const auto full = run_alone(g);
            if (!full.contains(0)) continue;
            std::vector<ScreenedEdit> edits;  // one not run in time (or crashed there) ranked as if it changed nothing
            for (const auto& [id, screen] : screened_[g].runs) {
                const auto alone = full.find(id);
                if (alone == full.end() ? !screen.failing.empty() : !alone->second.failing.empty())
                    edits.push_back(screened(id, alone == full.end() ? full.at(0) : alone->second));
            }
            const auto pairs = rank_edit_pairs(screened(0, full.at(0)), edits, t_.max_pairs);
            phase(fmt::format("pairs, group {}: {} of {} edits run alone on the quick checks, {} pairs to try", g + 1,
                              full.size() - 1, screened_[g].runs.size(), pairs.size()));
            if (const auto found = repairing_pair(g, pairs, phase))
                return pair_sentence(found->first, found->second, checks);
        }
        return "";
    }

private:
    std::string pair_sentence(int first, int second, const std::vector<std::string>& checks) const {
        return fmt::format(
            "found by repairing your code: {} {}, every check passes; with either alone, checks of {} still fail",
            edit_words(*edit_of(first)), edit_words(*edit_of(second), true),
            checks.front().substr(0, checks.front().find(':')));
    }

    // The most checks fixed first; of as many, the one the learner's file points at (evidence_rank:
    // `w[j] = dot * scale;` on the line that never read `scale`, before the same factor put into the
    // loop above it), so that a second slip is looked for beside the learner's own line.
    static bool most_fixes(const Effect& a, const Effect& b) {
        if (a.fixes.size() != b.fixes.size()) return a.fixes.size() > b.fixes.size();
        return evidence_order(*a.edit) < evidence_order(*b.edit);
    }

    // The edits the learner's file points at (evidence_rank) first, the likeliest first, the rest
    // after them in their order: a screen cut short by the budget (exercise 6's kernels on the
    // emulator, 580 edits over the tiled checks: 36 s) has run these.
    void evidence_first(std::vector<int>& ids) const {
        std::ranges::stable_sort(ids, std::less<>(), [&](int id) {
            const int rank = evidence_rank(*edit_of(id));
            return std::pair{rank < 0 ? 3 : rank, contrived(*edit_of(id))};
        });
    }

    // The edits a group of checks reaches, or nullopt when screening them would not fit in the time
    // left: each edit's run is taken to cost a quarter of an average check's own time in the
    // learner's first run (--durations, the process's start left out; a screen stops at the first
    // failure, most edits' early), t_.jobs at once. (The whole run's time instead, its start and sanitizers included, skipped exercise
    // 8's nine failing checks, screened in 3 s, and exercise 1's on a loaded machine.) A real model's check (exercise 12's
    // decode step, a second and a half, reached by ~400 edits: minutes) is skipped after its one
    // probe; screened anyway, it ran until the budget ended (23 s of a 33 s grade) and finished no
    // edit. (A sample of the edits timed instead misjudged both ways: ten quick ones of exercise 9
    // did not fit a one-second window, and the model's edits that fail fast fitted a two-second one.)
    std::optional<std::vector<int>> reached_in_time(const std::vector<std::string>& checks,
                                                    const std::string& tag) const {
        // Most edits fail the group's first check: an average check's time bounds an edit's cost.
        const double each = average_check_s(checks), jobs = std::max(1, t_.jobs);
        // Most edits fail long before the check's end (exercise 8's 526, over a check of 0.12 s,
        // were screened in 3 s): a quarter of it each.
        const auto fits = [&](std::size_t edits) {
            return edits <= 4 * static_cast<std::size_t>(jobs) ||
                   double(edits) * each / jobs / 4 <=
                       std::chrono::duration<double>(deadline_ - std::chrono::steady_clock::now()).count();
        };
        // Half of every edit the failing checks reach, when even that would not fit, is not worth
        // the probe that counts them (a model's run, 2 s). (The edits the file points at were
        // screened alone here too, once: a repaired run goes through the model's every decode step
        // where the learner's stopped at its first, and two such edits took 24 s.)
        if (!fits(ids_.size() / 2)) return std::nullopt;
        std::vector<int> ids = reached_by(checks, tag);
        if (!fits(ids.size())) return std::nullopt;
        return ids;
    }

    // The average of the checks' own times in the learner's run (each failing check's, else the
    // whole run's share).
    double average_check_s(const std::vector<std::string>& checks) const {
        double total = 0;
        for (const auto& name : checks)
            total += check_s_.contains(name) ? check_s_.at(name) : probe_s_ / double(failing_.size());
        return total / static_cast<double>(checks.size());
    }

    // Where every edit would not fit (reached_in_time), the few the learner's file points at
    // (evidence_rank 0: a range-for's copy made a reference, a line made like its twin), each taken
    // to cost a whole check (not the quarter of one reached_in_time counts: a repair runs on), when
    // that fits in the time left and the checks take under a second (exercise 7's real layers; not a real model's decode steps,
    // where a repaired run goes through every step: two such edits took 24 s).
    std::optional<std::vector<int>> evidence_in_time(const std::vector<std::string>& checks) const {
        const double each = average_check_s(checks), jobs = std::max(1, t_.jobs);
        std::vector<int> ids;
        std::ranges::copy_if(ids_, std::back_inserter(ids), [&](int id) { return evidence_rank(*edit_of(id)) == 0; });
        const double left = std::chrono::duration<double>(deadline_ - std::chrono::steady_clock::now()).count();
        if (ids.empty() || each >= 1.0 || double(ids.size()) * each / jobs > left) return std::nullopt;
        return ids;
    }

    bool late() const { return std::chrono::steady_clock::now() >= deadline_; }

    const Variant* edit_of(int id) const { return &*std::ranges::find(m_.variants, id, &Variant::id); }

    // An edit's screening run (id 0: the learner's own) as rank_edit_pairs reads it.
    ScreenedEdit screened(int id, const EachRun& run) const {
        ScreenedEdit e{id, 0, 0, run.failures};
        if (id != 0) e.region = edit_of(id)->region, e.line = edit_of(id)->line;
        return e;
    }

    std::map<int, EachRun> each(const std::string& tag, const std::vector<std::string>& checks,
                                const std::vector<int>& ids, bool abort_first = false, bool stop = false,
                                int with = 0) const {
        return each(tag, checks, ids, {abort_first, stop, with, deadline_});
    }

    std::map<int, EachRun> each(const std::string& tag, const std::vector<std::string>& checks,
                                const std::vector<int>& ids, EachHow how) const {
        how.fill_byte = fill_byte_;
        how.per_child = per_child_;
        if (how.child_timeout_s == 0) how.cpu_ms = edit_cpu_ms_;
        std::vector<std::string> selections;
        for (const int id : ids) selections.push_back(std::to_string(id));
        std::map<int, EachRun> out;
        for (auto& [selection, run] : run_each(s_, t_, built_.executable, dir_, tag, checks, selections,
                                               how.child_timeout_s > 0 ? how.child_timeout_s * 1000L : edit_ms_, how))
            out[std::stoi(selection)] = std::move(run);
        return out;
    }

    // Group g's screened edits and the learner's own code (0), each run on the group's quick checks
    // (no stop at the first failure: it would hide an edit that changes only a later check), without
    // fake stacks (this run only ranks), leaving the pairs a quarter of the time left. The last lines'
    // edits first: what passes a check alone is most often the later of two slips' repair (the small
    // cases hide a slip in the scores -- saturated, equal or d = 1 -- more often than one in the
    // output), and an edit this run does not reach is still paired, ranked last.
    // The learner's own code first, alone: where it does not run to the end of these checks (a
    // division by zero the sanitizers stop) no edit is ranked against it, and the rest were run for
    // nothing (exercise 5's count of zero heads: 7 s of a 9 s grade).
    std::map<int, EachRun> run_alone(std::size_t g) const {
        const auto now = std::chrono::steady_clock::now();
        const auto checks = quick_checks(g);
        auto full = each(fmt::format("pair_own{}", g), checks, {0}, {false, false, 0, now + (deadline_ - now) * 3 / 4});
        if (!full.contains(0)) return full;
        std::vector<int> ids;
        for (const auto& [id, run] : std::views::reverse(screened_[g].runs)) ids.push_back(id);
        full.merge(
            each(fmt::format("pair_alone{}", g), checks, ids, {false, false, 0, now + (deadline_ - now) * 3 / 4}));
        return full;
    }

    // With three checks or more, the quickest that take half their time, in the learner's run (Catch2's
    // --durations): the few slowest, a sweep over many shapes, fail with either slip, and an edit
    // that repairs one slip alone shows on the small cases where the other is hidden (d = 1, where
    // 1/d is 1/sqrt(d); a query whose weights are right).
    std::vector<std::string> quick_checks(std::size_t g) const {
        const std::vector<std::string>& checks = screened_[g].checks;
        if (checks.size() < 3) return checks;
        std::vector<std::pair<double, std::string>> took;
        for (const auto& name : checks)
            if (check_s_.contains(name)) took.emplace_back(check_s_.at(name), name);
        if (took.size() != checks.size()) return checks;
        std::ranges::sort(took);
        double total = 0, kept = 0;
        for (const auto& [seconds, name] : took) total += seconds;
        std::vector<std::string> quick;
        for (const auto& [seconds, name] : took) {
            kept += seconds;
            if (quick.empty() || kept <= total / 2) quick.push_back(name);
        }
        return quick;
    }

    // The first of `pairs` that passes every check with both edits on, fresh memory too: screened on
    // group g's checks in rounds, each stopped once a pair passes them; nullopt when none does in time.
    std::optional<std::pair<int, int>> repairing_pair(std::size_t g, const std::vector<std::pair<int, int>>& pairs,
                                                      const std::function<void(const std::string&)>& phase,
                                                      const std::string& tag = "pair") {
        const std::vector<std::string>& checks = screened_[g].checks;
        std::map<std::string, std::pair<int, int>> named;  // "a+b" (HEADWISE_REPAIR switches both on)
        std::vector<std::string> order;
        for (const auto& p : pairs) named[order.emplace_back(fmt::format("{}+{}", p.first, p.second))] = p;
        for (int round = 0; !order.empty() && !late(); ++round) {
            const auto screen =
                run_each(s_, t_, built_.executable, dir_, fmt::format("{}_screen{}_{}", tag, g, round), checks, order,
                         edit_ms_, {true, true, 0, deadline_, 0, fill_byte_, per_child_, edit_cpu_ms_});
            std::erase_if(order, [&](const std::string& p) { return screen.contains(p); });
            phase(fmt::format("{}s, group {}, round {}: {} screened", tag, g + 1, round + 1, screen.size()));
            if (screen.empty()) break;
            for (const auto& [selection, run] : screen) {
                Checks still;
                if (run.failing.empty() && run.total == int(checks.size()) && confirm(selection, &still) &&
                    still.empty())
                    return named.at(selection);
            }
        }
        return std::nullopt;
    }

    // The edits a group of checks reaches (another probe, when there are several groups): an edit
    // its checks never reach cannot change them.
    std::vector<int> reached_by(const std::vector<std::string>& checks, const std::string& tag) const {
        if (checks.size() == failing_.size()) return ids_;
        const fs::path list = dir_ / (tag + ".txt"), reached = dir_ / ("reached_" + tag + ".txt");
        write_check_list(list, checks);
        const RepairRun r = run_selection(s_, built_.executable, dir_, "-1", list, timeout_s_, reached, fill_byte_);
        return r.ran ? reached_ids(reached, built_.kept) : ids_;
    }

    // Confirmed on every check: what still fails after the edit must be some of what failed before.
    // A repair of everything must pass as well with fresh memory filled with 0 (fresh_memory.hpp):
    // one that passes only on what the grade's fill byte left (`+=` on weights never set) hides a
    // slip rather than undoes it.
    // The limit of a run of every check (or of every failing check) to its end, not stopped at the
    // first failure as the screens are: the passing checks can take far longer (exercise 8's, ~5 s
    // under the sanitizers, where its one failing check took 0.1 s and its repair was refused as a
    // time-out).
    int whole_run_s() const { return std::max(3 * timeout_s_, t_.confirm_floor_s); }

    bool confirm(const std::string& selection, Checks* still) const {
        const int limit = whole_run_s();
        // A schemata built without the sanitizers confirms in a build with them that holds only
        // the selection's edits (a second's compile: a few edits, not hundreds).
        const fs::path grader = built_.sanitized ? built_.executable : sanitized_build(selection);
        if (grader.empty()) return false;
        const fs::path dir = grader.parent_path();
        // The run on zeroed memory beside it, on the other core: a repair passes with either.
        std::future<RepairRun> zeros;
        if (fill_byte_ != 0)
            zeros = std::async(std::launch::async,
                               [&] { return run_selection(s_, grader, dir, selection, {}, limit, {}, 0); });
        const RepairRun r = run_selection(s_, grader, dir, selection, {}, limit, {}, fill_byte_);
        const RepairRun z = zeros.valid() ? zeros.get() : RepairRun{};
        if (!r.ran || r.total != report_.total) return false;
        if (!std::includes(failing_.begin(), failing_.end(), r.failing.begin(), r.failing.end())) return false;
        if (r.failing.empty() && fill_byte_ != 0 && (!z.ran || !z.failing.empty())) return false;
        *still = r.failing;
        return true;
    }

    // The grader built with its own options from the learner's file with only `selection`'s edits
    // (empty: it did not compile).
    fs::path sanitized_build(const std::string& selection) const {
        if (const auto known = sanitized_.find(selection); known != sanitized_.end()) return known->second;
        std::vector<int> ids;
        for (std::size_t at = 0; at < selection.size();) {
            const std::size_t end = selection.find_first_of(",+", at);
            ids.push_back(std::stoi(selection.substr(at, end - at)));
            at = end == std::string::npos ? selection.size() : end + 1;
        }
        const fs::path sub = dir_ / fmt::format("sanitized_{}", sanitized_.size());
        std::error_code ec;
        fs::create_directories(sub, ec);
        const fs::path source = s_.files.front();
        const fs::path file = sub / source.filename();
        write_if_changed(file.string(), selector_prelude(m_) + make_schemata(read_text(source), m_, ids).text);
        const bool built = build_variant(t_.build_dir, built_.recipe, source, file, sub / "grader",
                                         {.timeout_s = t_.slowest_compile_s});
        return sanitized_[selection] = built ? sub / "grader" : fs::path();
    }

public:
    // The edit a repair of everything names first (null: none, or a repair of part).
    const Variant* named() const { return named_; }

    // Every run from now on with fresh heap memory zeroed, not filled with the grade's byte: what a
    // fill the learner left out would have done (zeroed_slip).
    void zero_fresh_memory() { fill_byte_ = 0; }

    // With fresh memory zeroed, their code (no edit) run on the failing checks (every check takes
    // seconds where the checks run a real model): those that still fail become the ones to repair
    // (and probed for the edits they reach). Nullopt when it did not run.
    std::optional<Checks> failing_with_memory_zeroed() {
        const fs::path only = dir_ / "failing_zeroed.txt";
        write_check_list(only, all_failing_);
        const RepairRun r = run_selection(s_, built_.executable, dir_, "0", only,
                                          static_cast<int>(std::ceil(3 * probe_s_)) + 1, {}, fill_byte_);
        auto report = read_report(dir_ / fmt::format("run_0_{}.json", fill_byte_));
        if (!r.ran || !report || r.total != int(failing_.size())) return std::nullopt;
        report->passed += report_.total - report->total;  // the checks that passed before, passed
        report->total = report_.total;
        report_ = *report;
        failing_ = r.failing;
        all_failing_.assign(failing_.begin(), failing_.end());
        write_check_list(only, all_failing_);
        if (!failing_.empty() && !probe(only)) return std::nullopt;
        return failing_;
    }

private:
    const Variant* named_ = nullptr;
    int fill_byte_ = 190;
    const Subject& s_;
    const RepairSetup& t_;
    Report report_;  // a copy: zeroed memory replaces it (failing_with_memory_zeroed)
    const Mutants& m_;
    RepairBuild built_;
    mutable std::map<std::string, fs::path> sanitized_;  // sanitized_build's graders, by selection
    fs::path dir_;
    Checks failing_;
    std::vector<std::string> all_failing_;
    int timeout_s_;
    double probe_s_;                         // the learner's run of every failing check, in seconds
    std::map<std::string, double> check_s_;  // each failing check's own time in that run
    std::chrono::steady_clock::time_point deadline_;
    long edit_ms_;      // an edit's limit in run_each's screens (edit_limit_ms)
    long edit_cpu_ms_;  // and in CPU time (edit_cpu_limit_ms)
    int per_child_;     // EachHow::per_child
    std::vector<int> ids_;
    // What first_slip's screens said, group by group: the pair search ranks its edits by them.
    struct Screened {
        std::vector<std::string> checks;
        std::map<int, EachRun> runs;
        std::optional<EachRun> theirs;  // the learner's own code, screened beside them
    };
    std::vector<Screened> screened_;
    std::vector<std::string> still_failing_;  // what partial's repair leaves failing
};

// The learner's own run of the failing checks (`only`, their names) and its time in seconds. The
// grade's own run timed each failing check (Failure::seconds): not run again (exercise 6's kernels
// on the emulator, 3 s), a grader's start counted as a tenth of a second (it takes 0.02 s; half a
// second doubled exercise 9's edit time limit, where endless loops wait it out). A grade stopped
// by a crash has no times: its failing checks are run once more.
std::pair<RepairRun, double> their_failing_run(const Subject& s, const RepairSetup& t, const Report& report,
                                               const Checks& failing, const fs::path& grader, const fs::path& only) {
    if (report.finished && std::ranges::all_of(report.failures, [](const Failure& f) { return f.seconds > 0; })) {
        std::pair<RepairRun, double> out{{true, report.total, failing, {}}, 0.1};
        for (const Failure& f : report.failures) out.first.seconds[f.test] = f.seconds, out.second += f.seconds;
        return out;
    }
    const auto timed = std::chrono::steady_clock::now();
    RepairRun theirs =
        run_selection(s, grader, only.parent_path(), "0", only, static_cast<int>(t.slowest_probe_s) + 1, {}, 190, true);
    return {std::move(theirs), std::chrono::duration<double>(std::chrono::steady_clock::now() - timed).count()};
}

// Two slips, one of them a fill left out (their `+=` into memory nothing sets: `fill`, the
// never_cleared words): every check run again with fresh memory zeroed -- what the fill would have
// done -- and the other slip looked for there as a first slip, by `again` (a Repair of the same
// schemata). Said after the fill's lines: "...; with that memory zeroed, with `...` in place of your
// line 45 (...), every check passes". Empty when zeroed memory leaves nothing failing (the fill is
// the one slip) or something failing that did not before.
std::string zeroed_slip(Repair again, const std::string& fill, const std::function<void(const std::string&)>& phase) {
    again.zero_fresh_memory();
    const auto failing = again.failing_with_memory_zeroed();
    if (!failing || failing->empty()) return "";
    std::vector<Effect> parts;
    const std::string found = again.first_slip(parts, phase);
    phase(fmt::format("memory zeroed: {} checks fail, {}", failing->size(), found.empty() ? "no repair" : "repaired"));
    static const std::string lead = "found by repairing your code: ";
    if (!found.starts_with(lead)) return "";
    return fmt::format("{}the failing checks {}; with that memory zeroed, {}", lead, fill.substr(5),
                       found.substr(lead.size()));
}

}  // namespace

// The structs (header_structs) the learner's file sees through its
// quoted includes, two levels deep (decode.hpp, then headwise/model/quant.hpp's BlockQ4_1), each
// looked up beside the file, in src/, in exercises/common and at the top of the repository.
std::vector<HeaderStruct> included_structs(const fs::path& file, const fs::path& source_dir) {
    static const std::regex include(R"re(^\s*#\s*include\s*"([^"]+)")re");
    const std::vector<fs::path> dirs = {file.parent_path(), source_dir / "src", source_dir / "exercises" / "common",
                                        source_dir};
    std::vector<HeaderStruct> structs;
    std::set<fs::path> seen;
    const std::function<void(const fs::path&, int)> visit = [&](const fs::path& from, int depth) {
        std::istringstream in(read_text(from));
        for (std::string line; std::getline(in, line);) {
            std::smatch m;
            if (!std::regex_search(line, m, include)) continue;
            for (const fs::path& dir : dirs) {
                std::error_code ec;
                const fs::path header = dir / m[1].str();
                if (!fs::is_regular_file(header, ec)) continue;
                if (seen.insert(fs::weakly_canonical(header, ec)).second) {
                    for (auto& h : header_structs(read_text(header))) structs.push_back(std::move(h));
                    if (depth < 1) visit(header, depth + 1);
                }
                break;
            }
        }
    };
    visit(file, 0);
    std::ranges::move(header_structs(read_text(file)), std::back_inserter(structs));  // its own (a kernel's state)
    return structs;
}

std::vector<std::pair<int, int>> rank_edit_pairs(const ScreenedEdit& theirs, std::vector<ScreenedEdit> edits,
                                                 std::size_t cap) {
    const long theirs_differing = differing_values(theirs);
    std::vector<std::pair<std::pair<int, long>, std::size_t>> order;  // (rank, index into edits)
    for (std::size_t i = 0; i < edits.size(); ++i)
        order.push_back({change_rank(theirs, theirs_differing, edits[i]), i});
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::pair<int, int>> pairs;
    const auto add = [&](std::size_t i, std::size_t j) {
        const ScreenedEdit& a = edits[order[i].second];
        const ScreenedEdit& b = edits[order[j].second];
        if (a.line != b.line && a.region != b.region && pairs.size() < cap)
            pairs.push_back(a.line < b.line ? std::pair{a.id, b.id} : std::pair{b.id, a.id});
    };
    // The edits that repair a check alone (places 0 .. anchors - 1), each with every edit after it;
    // when there is none, the pairs whose first leaves fewer values differing (places 0 .. closer -
    // 1), by the sum of their places: 0 with 1, with 2, then 0 with 3 and 1 with 2, ...
    const std::size_t n = order.size();
    const auto below = [&](int tier) {
        return static_cast<std::size_t>(
            std::ranges::count_if(order, [&](const auto& ranked) { return ranked.first.first < tier; }));
    };
    const std::size_t anchors = below(1), closer = below(2);
    for (std::size_t i = 0; i < anchors; ++i)
        for (std::size_t j = i + 1; j < n; ++j) add(i, j);
    for (std::size_t sum = 1; anchors == 0 && n > 1 && sum <= 2 * n - 3 && pairs.size() < cap; ++sum)
        for (std::size_t i = sum >= n ? sum - n + 1 : 0; 2 * i < sum && i < closer; ++i) add(i, sum - i);
    return pairs;
}

std::string repair_step(const Subject& s, const RepairSetup& t, const std::function<void(const std::string&)>& progress,
                        SchemataInAdvance* begun) {
    // HEADWISE_GRADE_DEBUG: each phase's time on stderr.
    const auto began = std::chrono::steady_clock::now();
    const auto phase = [&, debug = std::getenv("HEADWISE_GRADE_DEBUG") != nullptr](const std::string& what) {
        if (debug)
            fmt::print(stderr, "repair: {} at {:.2f} s\n", what,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    };
    auto report = read_report(s.report);
    const RepairPlan plan = repair_plan(s);
    const SchemataBuild how = plan.build;
    // A grade stopped by a crash in one check (an empty range read: the count the learner's code
    // never advanced) is repaired on that check: an edit that makes the whole grade pass undoes it.
    // The crash may come after other failing checks (a second slip's: exercise 2's `heads == 0 &&`
    // division by zero after its slices' mismatch).
    const bool crashed = report && report->compiled && !report->finished && !report->failures.empty() &&
                         !report->failures.back().where.empty();
    if (!report || !(worth_locating(*report) || crashed) || s.files.empty() || how == SchemataBuild::none) return {};
    const Checks failing = failing_tests(*report);
    const fs::path source = s.files.front();
    const std::string text = read_text(source);
    // The edits and the compile begun before the build (headwise grade), when made for this text.
    if (begun != nullptr && !begun->made_for(text)) begun = nullptr;
    const Mutants m = begun ? begun->mutants() : generate_own_mutants(text, included_structs(source, s.source_dir));
    const auto recipe = begun                ? std::optional{begun->recipe()}
                        : m.variants.empty() ? std::nullopt
                                             : recipe_of(t.build_dir, t.target, source);
    if (!recipe) return {};
    const fs::path dir = repair_dir(t);
    if (begun == nullptr) {
        std::error_code ec;
        fs::remove_all(dir, ec);
        fs::create_directories(dir, ec);
    }
    // The learner's own grader on the failing checks first: checks this slow (a real model's
    // decoder, the kernels on the emulator) would take minutes over a few hundred edits, and the
    // grade does not wait for them (nor compiles the edits).
    const fs::path only = dir / "failing.txt";
    write_check_list(only, {failing.begin(), failing.end()});
    const auto [theirs, probe_s] = their_failing_run(s, t, *report, failing, t.build_dir / recipe->executable, only);
    if (!theirs.ran || theirs.failing != failing || probe_s > t.slowest_probe_s) {
        phase(fmt::format("the failing checks took {:.1f} s: no repair", probe_s));
        return {};
    }
    // An exercise with a budget of its own (course.json) is not compiled for when even its quickest
    // failing check, a quarter of it for each of half the edits (the screens' own reckoning,
    // reached_in_time), would not fit after a compile as long as the probe: exercise 7's real
    // layers (~800 edits over 0.5 s checks), not its one quick previous_token_score check.
    const int budget_s = plan.budget_s > 0 ? std::min(plan.budget_s, t.budget_s) : t.budget_s;
    if (plan.budget_s > 0 && !theirs.seconds.empty()) {
        const double quickest = std::ranges::min(theirs.seconds | std::views::values);
        const double left = budget_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        if (double(m.variants.size()) / 2 * quickest / std::max(1, t.jobs) / 4 > left - 2 * probe_s - 4) {
            phase(fmt::format("{} edits over checks of {:.2f} s at least: past the budget, no repair",
                              m.variants.size(), quickest));
            return {};
        }
    }
    if (progress) progress(fmt::format("repairing: compiling {} edits of your lines", m.variants.size()));
    const auto compiling = std::chrono::steady_clock::now();
    auto built = begun ? begun->take() : compile_schemata(s, t, *recipe, dir, text, m, how);
    if (built && !link_schemata(s, t, *built)) built.reset();
    // The budget is the screens': the wait for the compile is not taken from it (exercise 6's
    // kernels, ~1000 edits at -O0: 7-9 s when their file is new, where a budget of 8 s left none).
    const auto waited = std::chrono::steady_clock::now() - compiling;
    phase(fmt::format("{} of {} edits compiled{}", built ? built->kept.size() : 0, m.variants.size(),
                      begun ? " (begun before the build)" : ""));
    if (!built) return {};
    // An edit that runs far longer than the learner's code (an endless loop) is stopped: at twice
    // their run (whole seconds, one at least; two and more before, and exercise 9's endless `h += 0`
    // loops cost a grade 8 s).
    // Where their checks stopped at once -- a throw, a crash -- a repair runs them to their end, far
    // longer: three seconds at least (exercise 8's range of the previous token, which threw at the
    // first step: its repair's run took over the one second twice theirs allowed).
    const bool stopped_at_once = crashed || std::ranges::any_of(report->failures, [](const Failure& f) {
                                     return f.message.find("threw an exception") != std::string::npos;
                                 });
    const double floor_s = stopped_at_once ? 3.0 : 1.0;
    const int timeout_s = static_cast<int>(std::max(floor_s, std::ceil(2 * probe_s)));
    const auto deadline = began + std::chrono::seconds(budget_s) + waited;
    Repair repair(s, t, *report, m, *built, dir, timeout_s, probe_s, theirs.seconds, deadline, stopped_at_once);
    if (!repair.probe(only)) return {};
    phase("probe run");
    if (progress) progress("repairing: trying edits of your lines");
    std::vector<Effect> parts;
    // A catalogued mistake that reproduces every check names the misconception: a one-line slip
    // that makes it is still looked for (their line), two are not (the pair searches found none of
    // the fifth trial's seven such grades, and took 1-4 s each).
    const bool catalogued = !report->failures.empty() && std::ranges::all_of(report->failures, [&](const Failure& f) {
        return !f.mistake.empty() && f.mistake == report->failures.front().mistake;
    });
    std::string sentence = repair.first_slip(parts, phase, !catalogued);
    if (sentence.empty()) sentence = repair.second_slip_beside(parts, began, phase);
    if (sentence.empty() && !catalogued) sentence = repair.advancing_pair(phase);
    if (sentence.empty() && !catalogued) sentence = repair.evidence_pair(phase);
    if (sentence.empty() && !catalogued) sentence = repair.slip_pair(phase);
    // Not where the failing checks take a second or more (a real model's decode steps): every edit
    // would be screened on them once more, past the budget (exercise 12: 8 s for nothing).
    if (const std::string fill = repair.fill_left_out(); sentence.empty() && !fill.empty() && probe_s < 1.0)
        sentence = zeroed_slip(
            Repair(s, t, *report, m, *built, dir, timeout_s, probe_s, theirs.seconds, deadline, stopped_at_once), fill,
            phase);
    bool partly = false;
    if (sentence.empty()) sentence = repair.partial(parts), partly = !sentence.empty();
    if (sentence.empty()) sentence = repair.only_never_cleared(), partly = !sentence.empty();
    if (sentence.empty() || !(report = read_report(s.report))) return {};
    // Beside a catalogued mistake that reproduces every check, a repair that only drops a factor, a
    // term or a statement is one that makes up for it elsewhere (each head's projections at full
    // width, and the count's `heads *` dropped), not the learner's line.
    if (catalogued && repair.named() != nullptr && repair.named()->kind.ends_with("dropped")) {
        phase("a catalogued mistake reproduces every check; the repair only drops something: not said");
        return {};
    }
    report->repaired = sentence;
    report->repaired_partly = partly, report->still_failing = repair.still_failing();  // empty but after partial
    // A search edit is the solution's line; the repair is the learner's own: the one to read.
    report->edit.clear();
    write_report(s.report, *report);
    return sentence;
}

}  // namespace headwise::gradekit
