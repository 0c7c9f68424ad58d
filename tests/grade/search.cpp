// tests/grade/search.cpp -- see search.hpp.
#include "search.hpp"

#include "registry.hpp"

#include "gradekit/steps.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

// The schemata's selector: 0 the solution, > 0 one variant, -1 the probe (marks every site reached).
extern "C" {
int headwise_mutant = 0;
bool headwise_mutant_reached(int id);
}

namespace headwise::grade {

int search::selected_variant() { return headwise_mutant; }

namespace {

struct Candidate {
    int id;
    std::string fingerprint;  // one letter per check
    std::string kind;         // "a constant changed", "index swap", ...
    std::string message;
    long line = 0;  // the solution's line the edit is on
    bool alive = true;
    bool inexact = false;  // matched some failing check only within its tolerance
};

struct State {
    bool loaded = false, recording = false, off = false;
    std::vector<std::string> checks;
    std::vector<Candidate> candidates;
    std::vector<char> reached;   // by variant id, during the probe
    std::size_t next = 0;        // the index of the next check
    std::string learner;         // the learner's status on each check so far
    std::set<long> throw_lines;  // the lines of their file the learner's code threw from
    bool evidence = false;       // a failing check whose result holds a finite value, or a throw
    // Confirming a candidate (HEADWISE_MUTANT_SKIP): the learner's status on each check. A check the
    // learner failed was compared value by value in the confirming run already, and is not rerun.
    std::string compared;
    std::size_t recorded = 0;  // the checks recorded so far (in recording mode)
};

State& state() {
    static State s;
    return s;
}

}  // namespace

bool register_mutants(const char* data) {
    State& s = state();
    s.loaded = true;
    std::istringstream in(data);
    for (std::string line; std::getline(in, line);) {
        const auto t1 = line.find('\t');
        if (line.starts_with("check\t")) {
            s.checks.push_back(line.substr(t1 + 1));
        } else if (line.starts_with("variant\t")) {
            const auto t2 = line.find('\t', t1 + 1), t3 = line.find('\t', t2 + 1), t4 = line.find('\t', t3 + 1),
                       t5 = line.find('\t', t4 + 1);
            s.candidates.push_back({std::atoi(line.c_str() + t1 + 1), line.substr(t2 + 1, t3 - t2 - 1),
                                    line.substr(t3 + 1, t4 - t3 - 1), line.substr(t5 + 1),
                                    std::atol(line.c_str() + t4 + 1)});
        }
    }
    int largest = 0;
    for (const auto& c : s.candidates) largest = std::max(largest, c.id);
    s.reached.assign(static_cast<std::size_t>(largest) + 1, 0);
    // HEADWISE_GRADE_SEARCH=off: no search (to measure what it costs).
    if (const char* search = std::getenv("HEADWISE_GRADE_SEARCH"); search != nullptr && std::string(search) == "off")
        s.off = true;
    const char* selected = std::getenv("HEADWISE_MUTANT");
    if (selected == nullptr) return false;
    s.recording = true;
    headwise_mutant = std::atoi(selected);
    if (const char* compared = std::getenv("HEADWISE_MUTANT_SKIP")) s.compared = compared;
    return true;
}

namespace search {

bool already_compared() {
    State& s = state();
    if (!s.recording || s.recorded >= s.compared.size() || s.compared[s.recorded] == 'P') return false;
    std::printf("[headwise-mutant] %c\t-\tcompared by the confirming run\n", s.compared[s.recorded]);
    std::fflush(stdout);
    ++s.recorded;
    return true;
}

void observe(std::string_view what, char status, long error_line, bool informative,
             const std::function<std::string()>& digest, const std::function<Match()>& same) {
    const GraderWork timed;
    State& s = state();
    std::string name;
    if (auto* capture = Catch::getCurrentContext().getResultCapture()) name = capture->getCurrentTestName();
    name += " / " + std::string(what);
    if (s.recording) {
        std::printf("[headwise-mutant] %c\t%s\t%s\n", status, status == 'P' ? "-" : digest().c_str(), name.c_str());
        std::fflush(stdout);
        ++s.recorded;
        return;
    }
    if (!s.loaded || s.off) return;
    const std::size_t k = s.next++;
    // A check the data does not know (another grader, a test left out): nothing can be confirmed.
    if (k >= s.checks.size() || s.checks[k] != name) {
        if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr)
            std::fprintf(stderr, "[headwise-debug] search: check %zu is not in the data: %s\n", k, name.c_str());
        s.off = true;
        return;
    }
    s.learner.push_back(status);
    if (status == 'T') s.throw_lines.insert(error_line);
    if (status != 'P' && informative) s.evidence = true;
    bool any = false;
    for (auto& c : s.candidates) {
        c.alive = c.alive && c.fingerprint.size() > k && c.fingerprint[k] == status;
        any = any || c.alive;
    }
    if (!any) {
        if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr)
            std::fprintf(stderr, "[headwise-debug] search: no variant fails like this at check %zu (%c)\n", k, status);
        s.off = true;
        return;
    }
    // A check the learner passed is run for the candidates only if the run fails somewhere: at
    // the end, by the grader again with the candidate as its subject (finish). A learner who
    // passes everything waits on no variant.
    if (status == 'P') return;
    // The probe: the solution's run, marking the sites it reaches. The marks are kept from check
    // to check: a grader that caches a run per selector (one run serving several checks) reaches
    // its sites only in the check that made the run, and a site once reached is run for real.
    // The probe is needed only while a candidate's site is not yet known to be reached.
    bool all_reached = true;
    for (const auto& c : s.candidates)
        if (c.alive && !s.reached[static_cast<std::size_t>(c.id)]) all_reached = false;
    Match solution_same = Match::differs;
    if (!all_reached) {
        headwise_mutant = -1;
        solution_same = same();
        headwise_mutant = 0;
    }
    for (auto& c : s.candidates) {
        if (!c.alive) continue;
        Match m = solution_same;
        if (s.reached[static_cast<std::size_t>(c.id)]) {
            headwise_mutant = c.id;
            m = same();
            headwise_mutant = 0;
        }
        c.alive = m != Match::differs;
        c.inexact = c.inexact || m == Match::within_tolerance;
    }
}

namespace {

// Variant `id` run live on every check: this grader again with the variant as its subject (the
// recorder's mode, HEADWISE_MUTANT). Confirmed when it gives the learner's status on every check
// -- the failing ones were compared value by value in this run already, and the child records
// them without running them again (already_compared) -- and passes every check the learner passed.
bool confirmed_live(const State& s, int id) {
    // This very binary, with its arguments but Catch's output file and reporter (the child's
    // output is read here, and must not land in the learner's files), and no report of its own.
    std::vector<std::string> args{"/proc/self/exe"};
    const std::vector<std::string>& own = own_command();
    for (std::size_t i = 1; i < own.size(); ++i) {
        if (own[i] == "-o" || own[i] == "--out" || own[i] == "-r" || own[i] == "--reporter") {
            ++i;  // and its value
            continue;
        }
        if (!own[i].starts_with("--out=") && !own[i].starts_with("--reporter=")) args.push_back(own[i]);
    }
    constexpr std::string_view prefix = "[headwise-mutant] ";
    std::string statuses;
    bool ended = false;
    gradekit::run_captured(
        args, {"HEADWISE_MUTANT=" + std::to_string(id), "HEADWISE_MUTANT_SKIP=" + s.learner, "HEADWISE_GRADE_REPORT="},
        [&](const std::string& line) {
            if (line == std::string(prefix) + "end")
                ended = true;
            else if (line.starts_with(prefix) && line.size() > prefix.size())
                statuses.push_back(line[prefix.size()]);
            return false;
        },
        60);
    return ended && statuses == s.learner;
}

}  // namespace

std::string finish(bool run_failed) {
    State& s = state();
    if (s.recording) {
        std::printf("[headwise-mutant] end\n");
        std::fflush(stdout);
        return {};
    }
    if (!s.loaded || s.off || !run_failed || s.next != s.checks.size()) return {};
    // A run whose every failure is an exception says only where the code stopped: an edit on
    // another line that stops there the same way cannot be told from it, so only an edit on a line
    // the learner's code threw from is named then.
    const bool only_throws = s.learner.find('F') == std::string::npos;
    std::vector<const Candidate*> alive;
    for (const auto& c : s.candidates)
        if (c.alive && (!only_throws || s.throw_lines.contains(c.line))) alive.push_back(&c);
    // Failures that differ only where they are NaN (no finite value differs): many edits make a
    // NaN, and the same NaNs tell them apart only when a single edit is left.
    if (!s.evidence && alive.size() != 1) return {};
    // Several edits that behave alike on every check: the likeliest slip first (a constant or a
    // bound before a swapped variable, which may read a tensor the code has not written yet).
    // An edit that gives the learner's very values comes before one that is only as close.
    const auto rank = [](const Candidate* c) {
        static const std::vector<std::string> order = {"a constant changed", "< for <=",   "<= for <", "bound +1",
                                                       "bound -1",           "index swap", "index +1", "index -1"};
        const auto at = std::find(order.begin(), order.end(), c->kind);
        return std::tuple(c->inexact, at - order.begin(), c->id);
    };
    std::stable_sort(alive.begin(), alive.end(),
                     [&](const Candidate* a, const Candidate* b) { return rank(a) < rank(b); });
    // The passing checks, run live: the first two that hold are named (a few tries at most).
    std::vector<const Candidate*> confirmed;
    // A second one only as exact as the first, and not the same words (two spans, one edit).
    for (std::size_t i = 0; i < alive.size() && i < 4 && confirmed.size() < 2; ++i)
        if ((confirmed.empty() ||
             (alive[i]->inexact == confirmed[0]->inexact && alive[i]->message != confirmed[0]->message)) &&
            confirmed_live(s, alive[i]->id))
            confirmed.push_back(alive[i]);
    if (confirmed.empty()) return {};
    std::string text = confirmed.front()->message;
    if (confirmed.size() > 1) {
        const std::string prefix = "your code behaves exactly like the solution ";
        std::string other = confirmed[1]->message;
        if (other.starts_with(prefix)) other = other.substr(prefix.size());
        text += "; just as exactly like it " + other;
    }
    return text;
}

}  // namespace search

}  // namespace headwise::grade

extern "C" bool headwise_mutant_reached(int id) {
    auto& reached = headwise::grade::state().reached;
    if (id >= 0 && static_cast<std::size_t>(id) < reached.size()) reached[static_cast<std::size_t>(id)] = 1;
    return false;
}
