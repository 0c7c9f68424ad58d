// gradekit/pipeline.cpp -- see pipeline.hpp.
#include "gradekit/pipeline.hpp"

#include "gradekit/fresh_memory.hpp"
#include "gradekit/repair.hpp"
#include "gradekit/schemata.hpp"
#include "gradekit/transplant.hpp"
#include "gradekit/unused.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <future>
#include <optional>

namespace headwise::gradekit {

namespace {

RepairSetup repair_setup(const AfterRun& a) {
    RepairSetup repair;
    repair.build_dir = a.build_dir;
    repair.target = a.target;
    return repair;
}

}  // namespace

StepClock::StepClock(const char* clock)
    : clock_(clock), began_(std::chrono::steady_clock::now()), debug_(std::getenv("HEADWISE_GRADE_DEBUG") != nullptr) {}

void StepClock::ended(const char* step) const {
    if (debug_)
        fmt::print(stderr, "{}: {} ended at {:.2f} s\n", clock_, step,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count());
}

Begun::Begun() = default;
Begun::Begun(Begun&&) noexcept = default;
Begun::~Begun() = default;

Begun begin_before_build(const Subject& s, const AfterRun& a) {
    Begun b;
    b.schemata = std::make_unique<SchemataInAdvance>(s, repair_setup(a));
    return b;
}

Findings after_failed_run(const Subject& s, const AfterRun& a, const std::function<void(const std::string&)>& progress,
                          Begun* begun) {
    const StepClock clock("after the run");
    Findings f;
    // The fresh-memory step's run, on the core the repair's compile leaves idle: read at the end
    // if that step needs it (and waited for here, on the way out, if not).
    std::future<std::optional<Report>> zero_filled;
    if (const auto r = read_report(s.report); r && r->compiled && r->finished && !r->all_passed())
        zero_filled = std::async(std::launch::async, [&] { return zero_filled_run(s, a.grader); });
    f.repaired = repair_step(s, repair_setup(a), progress, begun != nullptr ? begun->schemata.get() : nullptr);
    TransplantSetup transplant;
    transplant.build_dir = a.build_dir;
    transplant.target = a.target;
    transplant.solution = a.solution;
    clock.ended("repair");
    f.located = transplant_step(s, transplant, progress);  // nothing when repaired (not when partly)
    clock.ended("transplant");
    f.fresh = fresh_memory_step(s, a.grader, &zero_filled);
    clock.ended("fresh memory");
    f.unread = unread_value_step(s);  // nothing named: a value their failing function never reads
    return f;
}

}  // namespace headwise::gradekit
