// tests/grade/report.cpp -- the grade report a grader run leaves for `headwise grade`, `list`
// and `watch`: a Catch2 listener that writes $HEADWISE_GRADE_REPORT (e.g. build/grade/ex03.json):
//
//   {"id":"ex03","compiled":true,"passed":4,"total":6,
//    "failures":[{"test":"...","message":"first failed check","mistake":"name or null",
//                 "explanation":"two lines or empty"}]}
//
// The file is rewritten after every test case (atomically), so a grader that crashes or is
// killed by ctest's timeout still leaves a report that says where it stopped.
// Catch2 2.x declares its reporter interfaces only on request, before the first include.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include "grade.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace headwise::grade {

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

class ReportListener : public Catch::TestEventListenerBase {
public:
    using TestEventListenerBase::TestEventListenerBase;

    void testRunStarting(Catch::TestRunInfo const& info) override {
        TestEventListenerBase::testRunStarting(info);
        total_ = Catch::filterTests(Catch::getAllTestCasesSorted(*m_config), m_config->testSpec(), *m_config).size();
        write(false);
    }

    void testCaseStarting(Catch::TestCaseInfo const& info) override {
        TestEventListenerBase::testCaseStarting(info);
        pending_diagnosis().reset();
        failure_ = nlohmann::ordered_json();
    }

    bool assertionEnded(Catch::AssertionStats const& stats) override {
        const Catch::AssertionResult& r = stats.assertionResult;
        if (!r.isOk() && failure_.is_null()) {
            auto& d = pending_diagnosis();
            if (d) {
                failure_ = {{"message", d->message},
                            {"mistake", d->mistake.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(d->mistake)},
                            {"explanation", d->explanation}};
            } else {
                std::string message = r.getMessage();
                if (message.empty() && r.hasExpression()) {
                    message = r.getExpressionInMacro() + " with expansion " + r.getExpandedExpression();
                }
                failure_ = {{"message", message}, {"mistake", nullptr}, {"explanation", ""}};
            }
            d.reset();
        }
        return TestEventListenerBase::assertionEnded(stats);
    }

    void testCaseEnded(Catch::TestCaseStats const& stats) override {
        if (failure_.is_null() && stats.totals.assertions.failed == 0) {
            ++passed_;
        } else {
            if (failure_.is_null()) failure_ = {{"message", "failed"}, {"mistake", nullptr}, {"explanation", ""}};
            failures_.push_back({{"test", stats.testInfo.name},
                                 {"message", failure_["message"]},
                                 {"mistake", failure_["mistake"]},
                                 {"explanation", failure_["explanation"]}});
        }
        failure_ = nlohmann::ordered_json();
        TestEventListenerBase::testCaseEnded(stats);
        write(false);
    }

    void testRunEnded(Catch::TestRunStats const& stats) override {
        write(true);
        TestEventListenerBase::testRunEnded(stats);
    }

private:
    void write(bool finished) const {
        const std::string path = env("HEADWISE_GRADE_REPORT");
        if (path.empty()) return;
        nlohmann::ordered_json failures = failures_;
        if (!finished) {
            failures.push_back({{"test", "(the grader itself)"},
                                {"message", "the grader stopped before its last test (a crash or ctest's timeout)"},
                                {"mistake", nullptr},
                                {"explanation", ""}});
        }
        const std::string id = env("HEADWISE_GRADE_ID");
        const nlohmann::ordered_json report = {{"id", id.empty() ? "unknown" : id},
                                       {"compiled", true},
                                       {"passed", passed_},
                                       {"total", total_},
                                       {"failures", failures}};
        const std::filesystem::path target(path), temporary(path + ".tmp");
        std::error_code ec;
        std::filesystem::create_directories(target.parent_path(), ec);
        {
            std::ofstream out(temporary, std::ios::trunc);
            out << report.dump(1) << '\n';
            if (!out) return;  // the report is a convenience: never fail a grade because of it
        }
        std::filesystem::rename(temporary, target, ec);
    }

    std::size_t total_ = 0;
    std::size_t passed_ = 0;
    nlohmann::ordered_json failure_;
    nlohmann::ordered_json failures_ = nlohmann::ordered_json::array();
};

}  // namespace

CATCH_REGISTER_LISTENER(ReportListener)

}  // namespace headwise::grade
