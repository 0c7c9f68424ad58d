// tests/grade/report.cpp -- the grader's side of the grade report (gradekit/report.hpp, the one
// writer): a Catch2 listener that writes $HEADWISE_GRADE_REPORT (e.g. build/grade/ex03.json).
//
// The file is rewritten when each test case starts ("running") and ends, so a grader that crashes
// or is killed still leaves a report that says where it stopped; the run step
// (gradekit/steps.hpp) then adds the crash's diagnosis. Each failing test case is one failure:
// its first failing check as the message, every failing check in the details. At the end of the
// run a catalogued mistake is named on every failure, if one reproduces every check of the run
// (grade::fitting_mistake). Test cases tagged [partN] / [optional] are counted as milestones.
// Catch2 2.x declares its reporter interfaces only on request, before the first include.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include "grade.hpp"

#include "gradekit/report.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>

namespace headwise::grade {

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// "part 1" for a [part1] tag, "optional" for [optional], empty otherwise.
std::string part_of(const Catch::TestCaseInfo& info) {
    for (const std::string& tag : info.tags) {
        if (tag.rfind("part", 0) == 0 && tag.size() > 4) return "part " + tag.substr(4);
        if (tag == "optional") return "optional";
    }
    return "";
}

class ReportListener : public Catch::TestEventListenerBase {
public:
    using TestEventListenerBase::TestEventListenerBase;

    void testRunStarting(Catch::TestRunInfo const& info) override {
        TestEventListenerBase::testRunStarting(info);
        run_failures().clear();  // the repair step's children run the checks again, one edit after another
        const auto tests = Catch::filterTests(Catch::getAllTestCasesSorted(*m_config), m_config->testSpec(), *m_config);
        report_.id = env("HEADWISE_GRADE_ID");
        report_.compiled = true;
        report_.total = static_cast<int>(tests.size());
        for (const auto& t : tests) {
            const std::string part = part_of(t);
            if (part.empty()) continue;
            if (!part_index_.count(part)) {
                part_index_[part] = report_.parts.size();
                report_.parts.push_back({part, 0, 0, 0});
            }
            ++report_.parts[part_index_[part]].total;
        }
        write();
    }

    void testCaseStarting(Catch::TestCaseInfo const& info) override {
        TestEventListenerBase::testCaseStarting(info);
        case_failures().clear();
        other_.clear();
        report_.running = info.name;
        started_ = std::chrono::steady_clock::now();
        grader_work_at_start_ = grader_work_seconds();
        // Counted as run when it starts: a test the sanitizer stops in ran (and failed).
        if (const std::string part = part_of(info); !part.empty()) ++report_.parts[part_index_[part]].ran;
        write();
    }

    bool assertionEnded(Catch::AssertionStats const& stats) override {
        const Catch::AssertionResult& r = stats.assertionResult;
        // Failures that did not come through grade's checks: an exception that escaped ("not
        // implemented yet", a crash Catch2 saw), a plain REQUIRE.
        if (!r.isOk() && other_.empty() && case_failures().empty()) {
            other_ = r.getMessage();
            if (other_.empty() && r.hasExpression()) {
                other_ = r.getExpressionInMacro() + " with expansion " + r.getExpandedExpression();
            }
        }
        if (r.isOk()) {
            ++report_.assertions_passed;
        }
        return TestEventListenerBase::assertionEnded(stats);
    }

    void testCaseEnded(Catch::TestCaseStats const& stats) override {
        const std::string part = part_of(stats.testInfo);
        if (case_failures().empty() && other_.empty() && stats.totals.assertions.failed == 0) {
            ++report_.passed;
            if (!part.empty()) ++report_.parts[part_index_[part]].passed;
        } else {
            gradekit::Failure f;
            f.test = stats.testInfo.name;
            const auto& checks = case_failures();
            if (!checks.empty()) {
                f.message = checks.front().message;
                f.where = checks.front().where;
                f.source = checks.front().source;
                f.lesson = checks.front().lesson;
                // The first check's message is the failure's; each later one's leads its lines.
                for (std::size_t k = 0; k < checks.size(); ++k) {
                    if (k > 0) f.details.push_back(checks[k].message);
                    for (const std::string& line : checks[k].details) f.details.push_back("    " + line);
                }
                if (checks.size() > 1)
                    f.message += fmt::format(" [and {} more failing check{} in this test]", checks.size() - 1,
                                             checks.size() > 2 ? "s" : "");
            } else {
                f.message = other_.empty() ? "failed" : other_;
            }
            f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() -
                        (grader_work_seconds() - grader_work_at_start_);  // its own time (registry.hpp)
            report_.failures.push_back(std::move(f));
        }
        case_failures().clear();
        other_.clear();
        report_.running.clear();
        TestEventListenerBase::testCaseEnded(stats);
        write();
    }

    void testRunEnded(Catch::TestRunStats const& stats) override {
        const std::string name = fitting_mistake();
        if (!name.empty()) {
            for (auto& f : report_.failures) {
                f.mistake = name;
                f.explanation = explanation_of(name);
            }
            fmt::print("headwise: every check, failing and passing, matches the known mistake \"{}\":\n  {}\n", name,
                       explanation_of(name));
        } else if (!run_failures().empty()) {
            fmt::print("headwise: no known mistake matches every failing check\n");
        }
        // The learner's own edit, found among the solution's variants and confirmed (search.hpp).
        if (const std::string edit = search::finish(!run_failures().empty()); !edit.empty()) {
            report_.edit = edit;
            fmt::print("headwise: {}\n", edit);
        }
        report_.finished = true;
        write();
        TestEventListenerBase::testRunEnded(stats);
    }

private:
    void write() const {
        const std::string path = env("HEADWISE_GRADE_REPORT");
        if (!path.empty()) gradekit::write_report(path, report_);
    }

    gradekit::Report report_;
    std::map<std::string, std::size_t> part_index_;
    std::string other_;
    std::chrono::steady_clock::time_point started_;  // the running test's start
    double grader_work_at_start_ = 0;                // grader_work_seconds() then
};

}  // namespace

CATCH_REGISTER_LISTENER(ReportListener)

}  // namespace headwise::grade
