// gradekit/pipeline.cpp -- see pipeline.hpp.
#include "gradekit/pipeline.hpp"

#include "gradekit/fresh_memory.hpp"
#include "gradekit/repair.hpp"
#include "gradekit/transplant.hpp"

namespace headwise::gradekit {

Findings after_failed_run(const Subject& s, const AfterRun& a,
                          const std::function<void(const std::string&)>& progress) {
    Findings f;
    RepairSetup repair;
    repair.build_dir = a.build_dir;
    repair.target = a.target;
    f.repaired = repair_step(s, repair, progress);
    TransplantSetup transplant;
    transplant.build_dir = a.build_dir;
    transplant.target = a.target;
    transplant.solution = a.solution;
    f.located = transplant_step(s, transplant, progress);  // nothing when repaired (not when partly)
    f.fresh = fresh_memory_step(s, a.grader);
    return f;
}

}  // namespace headwise::gradekit
