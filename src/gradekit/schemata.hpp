// gradekit/schemata.hpp -- the repair step's schemata (repair.hpp): the learner's file with every
// edit of their lines behind a selector, compiled and linked once as their grader was (rebuild.hpp).
//
// The compile is most of a repair's time (a few hundred edits of an xtensor file: 2-7 s on two
// cores) and needs nothing but the learner's file: `headwise grade` begins it before it builds
// and runs their grader (SchemataInAdvance), on the machine's other core, and the repair step
// takes it when the run has failed. A grade that passes stops it.
#pragma once

#include "gradekit/mutants.hpp"
#include "gradekit/rebuild.hpp"
#include "gradekit/repair.hpp"
#include "gradekit/steps.hpp"

#include <atomic>
#include <future>
#include <optional>
#include <set>
#include <string>

namespace headwise::gradekit {

// How course.json lets the repair step build this exercise's schemata: its "grading": {"repair":
// false} says not at all; {"build": "unsanitized"} says without the sanitizers, at -O0, each
// repair then confirmed in a build with them (exercise 6: its kernels are templates instantiated
// for five head sizes, and ~1000 edits took ~26 s to compile with the sanitizers, ~10 s without
// (a machine under load); the emulator checks every global and shared access itself). Its
// {"budget_s": s} ends the step sooner than RepairSetup's budget (exercise 7: every edit runs a
// real layer; a repair found in the first seconds is worth the wait, a screen of all of them is not).
enum class SchemataBuild { none, sanitized, unsanitized };
struct RepairPlan {
    SchemataBuild build = SchemataBuild::sanitized;
    int budget_s = 0;     // 0: RepairSetup's
    std::string options;  // the schemata's compile's own (course.json "options"), space-separated
};
RepairPlan repair_plan(const Subject& s);

// The selector the schemata's HW_M reads (the code put before the learner's file).
std::string selector_prelude(const Mutants& m);

struct RepairBuild {
    fs::path executable;
    std::set<int> kept;     // the edits that compiled
    bool sanitized = true;  // else each repair is confirmed again in a build with the sanitizers
    Recipe recipe;          // the grader's own, for that build
    fs::path file;          // the schemata's source (its object beside it)
};

// The schemata of `m`'s edits of `text` (s's first file), compiled into `dir`, not linked: an
// edit the compiler refuses is dropped (its line named in an error), the file compiled again, at
// most six times and t.slowest_compile_s seconds in all (a file whose few hundred edits take
// longer is not repaired). `stop` (may be null) ends it between compiles; `child` holds the
// running compiler's process group (run_captured), for whoever stops it.
std::optional<RepairBuild> compile_schemata(const Subject& s, const RepairSetup& t, const Recipe& grader_recipe,
                                            const fs::path& dir, const std::string& text, const Mutants& m,
                                            SchemataBuild how, const std::atomic<bool>* stop = nullptr,
                                            std::atomic<int>* child = nullptr);

// Links what compile_schemata made, as the grader is linked (its other objects, built by then).
bool link_schemata(const Subject& s, const RepairSetup& t, const RepairBuild& b);

// The schemata's compile begun in a thread of its own before the grader is built: the edits are
// those of the learner's file as it is now.
class SchemataInAdvance {
public:
    // Begins nothing where the exercise is never repaired, its file has no edits, or the grader's
    // recipe is not found.
    SchemataInAdvance(const Subject& s, const RepairSetup& t);
    // Stops a compile still running (its whole process group) and waits for its thread.
    ~SchemataInAdvance();
    SchemataInAdvance(const SchemataInAdvance&) = delete;
    SchemataInAdvance& operator=(const SchemataInAdvance&) = delete;

    // Whether it was begun for this text of the learner's file (not changed since).
    bool made_for(const std::string& text) const { return begun_ && text == text_; }
    const Mutants& mutants() const { return mutants_; }
    const Recipe& recipe() const { return recipe_; }
    // The compile's outcome, waited for (once).
    std::optional<RepairBuild> take();

private:
    bool begun_ = false;
    std::string text_;
    Mutants mutants_;
    Recipe recipe_;
    std::atomic<bool> stop_{false};
    std::atomic<int> child_{0};
    std::future<std::optional<RepairBuild>> done_;
};

// Where the repair step builds and runs an exercise's schemata: build/grade/repair/<target>.
fs::path repair_dir(const RepairSetup& t);

}  // namespace headwise::gradekit
