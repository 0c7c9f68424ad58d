// tests/grade/registry.hpp -- the implementations a grader binary knows about.
//
// A grader binary knows one *subject* (the code being graded: the learner's exercise, or in the
// meta-tests the solution, the pristine stub or a planted mistake) and a *catalogue* of known
// mistakes (tests/grade/exNN/mistakes/*.mistake, each patched into a copy of the solution). Both
// are tables of function pointers of the exercise's Api struct (tests/grade/NN_topic.hpp),
// registered before main() by small generated files (see cmake/HeadwiseExercises.cmake), so one
// compiled grader serves every subject.
// A meta-tests' grader (headwise_meta_<id>) holds many subjects, each under its key -- "solution",
// "stub", a catalogued mistake's key, "learner_<key>", "search_<key>" -- and grades the one --grade-subject=<key>
// names (grade_main.cpp): one binary for all of an exercise's meta-tests. The learner's grader
// grades the subject under the empty key, the learner's (the catalogue's mistakes are registered
// as subjects too, under their keys, and unused there).
// Light on purpose: those generated files include it, and they should compile in a blink.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

// The sanitizer runtime's symbolizer (grade builds link it; weak, so a plain build links too):
// grade.cpp places a throw with it, grade_main.cpp builds its tables before forking the repair's children.
extern "C" void __sanitizer_symbolize_pc(void* pc, const char* fmt, char* out_buf, std::size_t out_buf_size)
    __attribute__((weak));

namespace headwise::grade {

template <class Api>
struct Mistake {
    std::string name;         // "softmax over the wrong axis" (from the file name)
    std::string explanation;  // two lines (the first two comment lines of the file)
    Api api;
};

template <class Api>
std::vector<Mistake<Api>>& catalogue() {
    static std::vector<Mistake<Api>> mistakes;
    return mistakes;
}

template <class Api>
std::map<std::string, Api>& subjects() {
    static std::map<std::string, Api> by_key;
    return by_key;
}

// Every subject's key, whatever its Api (grade_main.cpp checks --grade-subject against them).
inline std::set<std::string>& subject_keys() {
    static std::set<std::string> keys;
    return keys;
}

// This grader's command line as main() got it: the search (search.hpp) runs the grader again
// with a candidate edit as its subject.
inline std::vector<std::string>& own_command() {
    static std::vector<std::string> command;
    return command;
}

// The key of the subject under grade: empty (the one subject of a learner's grader) unless
// --grade-subject names another.
inline std::string& chosen_subject() {
    static std::string key;
    return key;
}

template <class Api>
bool add_subject(Api api, const std::string& key = {}) {
    subjects<Api>()[key] = api;
    subject_keys().insert(key);
    return true;
}

// The seconds this process has spent on the grader's own runs beside the learner's code -- the
// catalogued mistakes (grade.hpp) and the search's variants of the solution (search.cpp), each
// timed by a GraderWork's life. A report's time of a check is the learner's code's alone: the
// repair step's runs, which run neither (HEADWISE_GRADE_CATALOGUE, HEADWISE_GRADE_SEARCH off), are
// estimated from it (exercise 7's first check: 0.54 s with them, 12 ms without).
inline double& grader_work_seconds() {
    static double seconds = 0;
    return seconds;
}
struct GraderWork {
    std::chrono::steady_clock::time_point began = std::chrono::steady_clock::now();
    GraderWork() = default;
    GraderWork(const GraderWork&) = delete;
    GraderWork& operator=(const GraderWork&) = delete;
    ~GraderWork() {
        grader_work_seconds() += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    }
};

template <class Api>
bool add_mistake(Api api, std::string name, std::string explanation) {
    catalogue<Api>().push_back({std::move(name), std::move(explanation), api});
    return true;
}

// The solution's single-edit variants behind one selector (tests/grade/search.hpp), registered
// with their data by the generated schemata file (cmake/HeadwiseMutants.cmake).
template <class Api>
std::optional<Api>& mutants_slot() {
    static std::optional<Api> mutants;
    return mutants;
}
bool register_mutants(const char* data);  // search.cpp: true when HEADWISE_MUTANT makes them the subject
template <class Api>
std::optional<Api>& mutant_subject_slot() {
    static std::optional<Api> subject;
    return subject;
}
template <class Api>
bool add_mutants(Api api, const char* data) {
    mutants_slot<Api>() = api;
    if (register_mutants(data)) mutant_subject_slot<Api>() = api;
    return true;
}

template <class Api>
const Api& subject() {
    // search: taking the variants' fingerprints (HEADWISE_MUTANT=<id>), the selected variant is graded
    if (mutant_subject_slot<Api>()) return *mutant_subject_slot<Api>();
    const auto found = subjects<Api>().find(chosen_subject());
    if (found == subjects<Api>().end()) throw std::logic_error("this grader was built without a subject to grade");
    return found->second;
}

}  // namespace headwise::grade
