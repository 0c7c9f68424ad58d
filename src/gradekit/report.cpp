// gradekit/report.cpp -- see report.hpp.
#include "gradekit/report.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <system_error>

namespace headwise::gradekit {

namespace {

using json = nlohmann::ordered_json;

std::string text(const json& j, const char* key) {
    return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
}

}  // namespace

bool write_report(const std::filesystem::path& path, const Report& r) {
    json failures = json::array();
    for (const Failure& f : r.failures) {
        failures.push_back({{"test", f.test},
                            {"message", f.message},
                            {"mistake", f.mistake.empty() ? json() : json(f.mistake)},
                            {"explanation", f.explanation},
                            {"where", f.where},
                            {"source", f.source},
                            {"lesson", f.lesson},
                            {"details", f.details},
                            {"seconds", f.seconds}});
    }
    json parts = json::array();
    for (const Part& p : r.parts)
        parts.push_back({{"name", p.name}, {"passed", p.passed}, {"total", p.total}, {"ran", p.ran}});
    const json j = {{"id", r.id.empty() ? "unknown" : r.id},
                    {"compiled", r.compiled},
                    {"finished", r.finished},
                    {"passed", r.passed},
                    {"total", r.total},
                    {"assertions_passed", r.assertions_passed},
                    {"running", r.running},
                    {"failures", failures},
                    {"warnings", r.warnings},
                    {"parts", parts},
                    {"edit", r.edit},
                    {"located", r.located},
                    {"repaired", r.repaired},
                    {"repaired_partly", r.repaired_partly},
                    {"still_failing", r.still_failing}};
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    const std::filesystem::path temporary = path.string() + ".tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << j.dump(1) << '\n';
        if (!out) return false;
    }
    std::filesystem::rename(temporary, path, ec);
    return !ec;
}

std::optional<Report> read_report(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    try {
        const json j = json::parse(in);
        Report r;
        r.id = text(j, "id");
        r.compiled = j.at("compiled").get<bool>();
        r.finished = j.value("finished", true);
        r.passed = j.at("passed").get<int>();
        r.total = j.at("total").get<int>();
        r.assertions_passed = j.value("assertions_passed", 0);
        r.running = text(j, "running");
        r.edit = text(j, "edit");
        r.located = text(j, "located");
        r.repaired = text(j, "repaired");
        r.repaired_partly = j.value("repaired_partly", false);
        for (const auto& c : j.value("still_failing", json::array()))
            if (c.is_string()) r.still_failing.push_back(c.get<std::string>());
        for (const auto& f : j.value("failures", json::array())) {
            Failure x{text(f, "test"),  text(f, "message"), text(f, "mistake"), text(f, "explanation"),
                      text(f, "where"), text(f, "source"),  text(f, "lesson"),  {}};
            x.seconds = f.value("seconds", 0.0);
            for (const auto& d : f.value("details", json::array()))
                if (d.is_string()) x.details.push_back(d.get<std::string>());
            r.failures.push_back(std::move(x));
        }
        for (const auto& w : j.value("warnings", json::array()))
            if (w.is_string()) r.warnings.push_back(w.get<std::string>());
        for (const auto& p : j.value("parts", json::array()))
            r.parts.push_back(
                {text(p, "name"), p.value("passed", 0), p.value("total", 0), p.value("ran", p.value("total", 0))});
        return r;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

std::string edited_line_of(const std::string& edit) {
    const std::string open = "with `", close = "` in place of `";
    const std::size_t from = edit.find(open), to = edit.find(close);
    if (from == std::string::npos || to == std::string::npos || to < from) return {};
    return edit.substr(from + open.size(), to - from - open.size());
}

std::set<std::string> failing_tests(const Report& r) {
    std::set<std::string> tests;
    for (const Failure& f : r.failures) tests.insert(f.test);
    return tests;
}

void write_check_list(const std::filesystem::path& path, const std::vector<std::string>& checks) {
    std::ofstream out(path);
    for (const auto& name : checks) out << std::regex_replace(name, std::regex(R"([\\,\[\]])"), R"(\$&)") << '\n';
}

bool worth_locating(const Report& r) {
    return r.compiled && r.finished && !r.all_passed() &&
           !std::all_of(r.failures.begin(), r.failures.end(),
                        [](const Failure& f) { return f.message.rfind("not implemented yet", 0) == 0; });
}

}  // namespace headwise::gradekit
