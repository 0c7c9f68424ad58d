// tests/grade/search.cpp -- see search.hpp.
#include "search.hpp"

#include "registry.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
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
    bool alive = true;
};

struct State {
    bool loaded = false, recording = false, off = false;
    std::vector<std::string> checks;
    std::vector<Candidate> candidates;
    std::vector<char> reached;  // by variant id, during the probe
    std::size_t next = 0;       // the index of the next check
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
            const auto t2 = line.find('\t', t1 + 1), t3 = line.find('\t', t2 + 1), t4 = line.find('\t', t3 + 1);
            s.candidates.push_back({std::atoi(line.c_str() + t1 + 1), line.substr(t2 + 1, t3 - t2 - 1),
                                    line.substr(t3 + 1, t4 - t3 - 1), line.substr(t4 + 1)});
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
    return true;
}

namespace search {

void observe(std::string_view what, char status, const std::function<std::string()>& digest,
             const std::function<bool()>& same) {
    State& s = state();
    std::string name;
    if (auto* capture = Catch::getCurrentContext().getResultCapture()) name = capture->getCurrentTestName();
    name += " / " + std::string(what);
    if (s.recording) {
        std::printf("[headwise-mutant] %c\t%s\t%s\n", status, status == 'P' ? "-" : digest().c_str(), name.c_str());
        std::fflush(stdout);
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
    // The probe: the solution's run, marking the sites it reaches. The marks are kept from check
    // to check: a grader that caches a run per selector (one run serving several checks) reaches
    // its sites only in the check that made the run, and a site once reached is run for real.
    headwise_mutant = -1;
    const bool solution_same = same();
    headwise_mutant = 0;
    for (auto& c : s.candidates) {
        if (!c.alive) continue;
        if (!s.reached[static_cast<std::size_t>(c.id)]) {
            c.alive = solution_same;
            continue;
        }
        headwise_mutant = c.id;
        c.alive = same();
        headwise_mutant = 0;
    }
}

std::string finish(bool run_failed) {
    State& s = state();
    if (s.recording) {
        std::printf("[headwise-mutant] end\n");
        std::fflush(stdout);
        return {};
    }
    if (!s.loaded || s.off || !run_failed || s.next != s.checks.size()) return {};
    std::vector<const Candidate*> confirmed;
    for (const auto& c : s.candidates)
        if (c.alive) confirmed.push_back(&c);
    if (confirmed.empty()) return {};
    // Several edits that behave alike on every check: the likeliest slip first (a constant or a
    // bound before a swapped variable, which may read a tensor the code has not written yet).
    const auto rank = [](const Candidate* c) {
        static const std::vector<std::string> order = {"a constant changed", "< for <=",   "<= for <", "bound +1",
                                                       "bound -1",           "index swap", "index +1", "index -1"};
        const auto at = std::find(order.begin(), order.end(), c->kind);
        return std::pair(at - order.begin(), c->id);
    };
    std::stable_sort(confirmed.begin(), confirmed.end(),
                     [&](const Candidate* a, const Candidate* b) { return rank(a) < rank(b); });
    std::string text = confirmed.front()->message;
    if (confirmed.size() > 1) {
        const std::string prefix = "your code behaves exactly like the solution ";
        std::string other = confirmed[1]->message;
        if (other.starts_with(prefix)) other = other.substr(prefix.size());
        text += "; just as exactly like it " + other;
        if (confirmed.size() > 2) text += fmt::format(" (and {} more single edits)", confirmed.size() - 2);
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
