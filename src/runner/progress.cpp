#include "progress.hpp"

#include "exercise_files.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace headwise::runner {

fs::path report_path(const Exercise& e) { return binary_dir() / "grade" / (e.id + ".json"); }

std::optional<GradeReport> read_report(const Exercise& e) {
    const fs::path path = report_path(e);
    std::error_code ec;
    const auto written = fs::last_write_time(path, ec);
    if (ec) return std::nullopt;
    auto r = gradekit::read_report(path);
    if (!r) return std::nullopt;  // half-written or foreign: grading again rewrites it
    GradeReport g;
    static_cast<gradekit::Report&>(g) = std::move(*r);
    g.written = written;
    return g;
}

std::string ExerciseStatus::describe() const {
    std::string s;
    switch (status) {
        case Status::not_started:
            s = "not started";
            break;
        case Status::edited:
            s = "edited, not graded yet";
            break;
        case Status::does_not_compile:
            s = "does not compile";
            break;
        case Status::failing:
            s = fmt::format("failing: {} of {} tests pass", passed, total);
            break;
        case Status::passed:
            s = "passed";
            break;
    }
    if (stale) s += " (edited since the last grade)";
    return s;
}

ExerciseStatus exercise_status(const Exercise& e) {
    ExerciseStatus st;
    const auto report = read_report(e);
    if (report && report->all_passed()) {
        st.status = Status::passed;
    } else {
        bool pristine = false;
        try {
            pristine = is_pristine(e, pristine_stubs(e));
        } catch (const std::exception&) {
            pristine = false;  // no solution to compare with: judge by the report alone
        }
        if (pristine) return st;  // not started, whatever an old report says
        if (!report) {
            st.status = Status::edited;
            return st;
        }
        st.status = !report->compiled ? Status::does_not_compile : Status::failing;
    }
    st.passed = report->passed;
    st.total = report->total;
    std::error_code ec;
    for (const auto& file : e.files) {
        const auto t = fs::last_write_time(learner_path(e, file), ec);
        if (!ec && t > report->written) st.stale = true;
    }
    return st;
}

bool exercise_passed(const Exercise& e) {
    const auto report = read_report(e);
    return report && report->all_passed();
}

const Lesson* next_lesson(const std::vector<Lesson>& course) {
    for (const auto& l : course)
        if (l.exercise && !exercise_passed(*l.exercise)) return &l;
    return nullptr;
}

const Exercise& require_exercise(const std::vector<Lesson>& course, const Lesson& lesson) {
    if (lesson.exercise) return *lesson.exercise;
    std::string with;
    for (const auto& l : course)
        if (l.exercise) with += fmt::format("{}{}", with.empty() ? "" : ", ", l.number);
    throw usage_error(fmt::format("lesson {} has no exercise (the exercises are {})", lesson.number,
                                  with.empty() ? "not written yet" : with));
}

void add_exercise_command(CLI::App& app, Action& action, const std::string& name, const std::string& description,
                          const std::string& flag, const std::string& flag_help,
                          std::function<int(const std::string&, bool)> body) {
    struct Args {
        std::string which;
        bool flag = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand(name, description);
    cmd->add_option("exercise", args->which, "lesson/exercise number, e.g. 3")->required();
    cmd->add_flag(flag, args->flag, flag_help);
    cmd->callback([&action, args, body] { action = [args, body] { return body(args->which, args->flag); }; });
}

fs::path state_path() { return binary_dir() / "headwise-progress.json"; }

State load_state() {
    State s;
    const auto text = read_file(state_path());
    if (!text) return s;
    try {
        const auto j = nlohmann::json::parse(*text);
        const auto hints = j.value("hints_shown", nlohmann::json::object());  // named: items() must not outlive it
        for (const auto& [id, shown] : hints.items()) {
            if (shown.is_number_integer()) {  // an older state file: how many, in order
                for (int k = 1; k <= shown.get<int>(); ++k) s.hints_shown[id].insert(k);
            } else {
                s.hints_shown[id] = shown.get<std::set<int>>();
            }
        }
    } catch (const nlohmann::json::exception&) {
        fmt::print(stderr, "headwise: note: ignoring the unreadable {} (it only counts hints shown)\n",
                   state_path().string());
        s = State{};
    }
    return s;
}

void save_state(const State& s) {
    const nlohmann::json j = {
        {"_comment", "headwise runner state: safe to delete (only hint counters; grades live in grade/)"},
        {"hints_shown", s.hints_shown}};
    write_atomically(state_path(), j.dump(2) + "\n");
}

}  // namespace headwise::runner
