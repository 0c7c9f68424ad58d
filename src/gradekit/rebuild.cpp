// gradekit/rebuild.cpp -- see rebuild.hpp.
#include "gradekit/rebuild.hpp"

#include "gradekit/steps.hpp"

#include <vector>

namespace headwise::gradekit {

namespace {

// The word after " -o " in a command line.
std::string output_of(const std::string& command) {
    const auto at = command.find(" -o ");
    if (at == std::string::npos) return {};
    const auto begin = at + 4, end = command.find(' ', begin);
    return command.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace

std::optional<Recipe> recipe_of(const fs::path& build_dir, const std::string& target, const fs::path& source) {
    std::vector<std::string> commands;
    const int rc =
        run_captured({"ninja", "-C", build_dir.string(), "-t", "commands", target}, {}, [&](const std::string& line) {
            commands.push_back(line);
            return false;
        });
    if (rc != 0 || commands.empty()) return std::nullopt;
    Recipe r;
    for (const auto& c : commands)
        if (c.find(" -c " + source.string()) != std::string::npos) r.compile = c;
    r.link = commands.back();
    r.object = output_of(r.compile);
    r.executable = output_of(r.link);
    if (r.compile.empty() || r.object.empty() || r.executable.empty() || r.link.find(r.object) == std::string::npos)
        return std::nullopt;
    return r;
}

bool build_variant(const fs::path& build_dir, const Recipe& r, const fs::path& source, const fs::path& variant,
                   const fs::path& executable, const BuildOptions& o) {
    const std::string object = variant.string() + ".o";
    std::string compile = replace_all(r.compile, r.object, object);
    compile = replace_all(compile, " -c " + source.string(),
                          " -iquote " + source.parent_path().string() + " -c " + variant.string());
    std::string link = replace_all(r.link, r.object, object);
    link = replace_all(link, " -o " + r.executable + " ", " -o " + executable.string() + " ");
    using Steps = BuildOptions::Steps;
    const std::string script = "cd \"$1\" && " + (o.steps == Steps::link      ? link
                                                  : o.steps == Steps::compile ? compile
                                                                              : compile + " && " + link);
    // coreutils' timeout stops the whole process group (its own: it makes one): the compiler too,
    // not only its shell.
    std::vector<std::string> command = {"sh", "-c", script, "sh", build_dir.string()};
    if (o.timeout_s > 0) command.insert(command.begin(), {"timeout", "-s", "KILL", std::to_string(o.timeout_s)});
    return run_captured(
               command, {},
               [&](const std::string& line) {
                   if (o.log != nullptr) *o.log += line + "\n";
                   return false;
               },
               0, o.child) == 0;
}

}  // namespace headwise::gradekit
