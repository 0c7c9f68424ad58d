// gradekit/pipeline.cpp -- see pipeline.hpp.
#include "gradekit/pipeline.hpp"

#include "gradekit/fresh_memory.hpp"
#include "gradekit/repair.hpp"
#include "gradekit/schemata.hpp"
#include "gradekit/transplant.hpp"

namespace headwise::gradekit {

namespace {

RepairSetup repair_setup(const AfterRun& a) {
    RepairSetup repair;
    repair.build_dir = a.build_dir;
    repair.target = a.target;
    return repair;
}

}  // namespace

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
    Findings f;
    f.repaired = repair_step(s, repair_setup(a), progress, begun != nullptr ? begun->schemata.get() : nullptr);
    TransplantSetup transplant;
    transplant.build_dir = a.build_dir;
    transplant.target = a.target;
    transplant.solution = a.solution;
    f.located = transplant_step(s, transplant, progress);  // nothing when repaired (not when partly)
    f.fresh = fresh_memory_step(s, a.grader);
    return f;
}

}  // namespace headwise::gradekit
