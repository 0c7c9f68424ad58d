#include "common.hpp"

#include "gradekit/steps.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace headwise::runner {

// HEADWISE_SOURCE_DIR / HEADWISE_BINARY_DIR in the environment point the runner at another
// course tree (the runner's tests use a temporary one and never touch the real exercises/).
static fs::path from_env_or(const char* name, const char* built_in) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? fs::path(v) : fs::path(built_in);
}
fs::path source_dir() { return from_env_or("HEADWISE_SOURCE_DIR", HEADWISE_SOURCE_DIR); }
fs::path binary_dir() { return from_env_or("HEADWISE_BINARY_DIR", HEADWISE_BINARY_DIR); }

std::vector<Lesson> load_course() {
    const fs::path file = source_dir() / "course.json";
    std::ifstream in(file);
    if (!in) throw std::runtime_error(fmt::format("cannot read the course catalogue {}", file.string()));
    const auto j = nlohmann::json::parse(in);
    std::vector<Lesson> lessons;
    for (const auto& l : j.at("lessons")) {
        Lesson lesson{l.at("number").get<int>(),
                      l.at("name").get<std::string>(),
                      l.at("title").get<std::string>(),
                      l.value("doc", std::string()),
                      std::nullopt,
                      l.value("needs_model", false)};
        if (l.contains("exercise")) {
            const auto& e = l.at("exercise");
            lesson.exercise = Exercise{e.at("id").get<std::string>(), e.at("dir").get<std::string>(),
                                       e.at("files").get<std::vector<std::string>>(), e.value("hints", std::string())};
        }
        lessons.push_back(std::move(lesson));
    }
    return lessons;
}

const Lesson& find_lesson(const std::vector<Lesson>& course, const std::string& which) {
    int n = -1;
    try {
        std::size_t used = 0;
        n = std::stoi(which, &used);
        if (used != which.size()) n = -1;
    } catch (const std::exception&) {
        n = -1;
    }
    for (const auto& l : course)
        if (l.number == n || l.name == which) return l;
    std::string known;
    for (const auto& l : course) known += fmt::format("{}{}", known.empty() ? "" : ", ", l.number);
    throw usage_error(fmt::format("no lesson '{}' (the lessons are {})", which, known));
}

int run_program(const std::vector<std::string>& args, const fs::path& cwd) {
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
    if (pid == 0) {
        if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
        gradekit::exec_or_exit(args, "headwise: ");
    }
    return gradekit::wait_exit_code(pid);
}

}  // namespace headwise::runner
