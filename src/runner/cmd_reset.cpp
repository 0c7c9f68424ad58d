// `headwise reset N [--yes]` -- put exercise N back to its pristine stub, after saving the
// learner's version to a timestamped backup that it names.
//
// The order of the steps is what makes it safe; each one can fail without losing anything:
//   1. make the stubs from solutions/ (gradekit/stub.hpp, in memory)
//   2. nothing differs from the stub: say so and stop (no backup, no question)
//   3. ask, unless --yes (no answer, or stdin closed, means no)
//   4. copy every learner file into the backup directory, flush it to disk, read it back and
//      compare: any difference stops the reset before a file is touched
//   5. replace each differing file atomically (temporary file + rename in its own directory)
//
// Backups live outside the build directory (deleting build/ to start afresh must not delete
// them): $XDG_DATA_HOME/headwise/backups, else ~/.local/share/headwise/backups.
#include "common.hpp"
#include "exercise_files.hpp"
#include "progress.hpp"

#include <CLI/CLI.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>
#include <iostream>

namespace headwise::runner {

namespace {

fs::path backup_root() {
    if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x == '/')
        return fs::path(x) / "headwise" / "backups";
    if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
        return fs::path(h) / ".local/share/headwise/backups";
    return binary_dir() / "backups";
}

// A new, empty directory <root>/<id>-<YYYYmmdd-HHMMSS>[-k].
fs::path make_backup_dir(const Exercise& e) {
    const fs::path root = backup_root();
    std::error_code ec;
    fs::create_directories(root, ec);
    if (!fs::is_directory(root)) {
        throw std::runtime_error(fmt::format("cannot create the backup directory {}: {}; nothing was reset",
                                             root.string(), ec ? ec.message() : "not a directory"));
    }
    const std::string stamp = fmt::format("{:%Y%m%d-%H%M%S}", fmt::localtime(std::time(nullptr)));
    for (int k = 1; k < 1000; ++k) {
        const fs::path dir =
            root / (k == 1 ? fmt::format("{}-{}", e.id, stamp) : fmt::format("{}-{}-{}", e.id, stamp, k));
        if (fs::create_directory(dir, ec)) return dir;
        if (ec)
            throw std::runtime_error(
                fmt::format("cannot create {}: {}; nothing was reset", dir.string(), ec.message()));
    }
    throw std::runtime_error("too many backups in the same second; nothing was reset");
}

struct Backup {
    fs::path dir;
    std::string restore_command;  // "cp <dir>/a.cpp <dir>/b.hpp <exercises>/<dir>/"
};

// Copies the learner's files into a new backup directory and proves the copy is there.
Backup back_up(const Exercise& e) {
    Backup b{make_backup_dir(e), "cp"};
    for (const auto& file : e.files) {
        const auto mine = read_file(learner_path(e, file));
        if (!mine) continue;  // deleted by the learner: nothing to keep
        write_atomically(b.dir / file, *mine);
        if (read_file(b.dir / file) != mine) {
            throw std::runtime_error(
                fmt::format("the backup {} does not read back equal; nothing was reset", (b.dir / file).string()));
        }
        b.restore_command += " " + (b.dir / file).string();
    }
    const fs::path exercise_dir = source_dir() / "exercises" / e.dir;
    b.restore_command += " " + exercise_dir.string() + "/";
    write_atomically(b.dir / "HEADWISE-BACKUP.txt",
                     fmt::format("Saved by `headwise reset` from {}/ before it restored the stubs.\n"
                                 "To bring this version back:\n  {}\n",
                                 exercise_dir.string(), b.restore_command));
    return b;
}

bool confirmed(const std::string& question) {
    fmt::print("{} [y/N] ", question);
    std::fflush(stdout);
    std::string answer;
    if (!std::getline(std::cin, answer)) {
        fmt::print("\n");
        return false;  // no terminal, or stdin closed: never assume yes
    }
    return answer == "y" || answer == "Y" || answer == "yes" || answer == "YES" || answer == "Yes";
}

int reset(const std::string& which, bool yes) {
    const auto course = load_course();
    const Lesson& lesson = find_lesson(course, which);
    const Exercise& e = require_exercise(course, lesson);

    const auto stubs = pristine_stubs(e);
    std::vector<std::string> differing;
    for (const auto& file : e.files)
        if (read_file(learner_path(e, file)) != stubs.at(file)) differing.push_back(file);
    if (differing.empty()) {
        fmt::print("exercise {:02} (exercises/{}/) is already the pristine stub: nothing to reset\n", lesson.number,
                   e.dir);
        return 0;
    }

    fmt::print("reset exercise {:02}: {} of exercises/{}/ will be replaced by the stub: {}\n", lesson.number,
               differing.size() == 1 ? "1 file" : fmt::format("{} files", differing.size()), e.dir,
               fmt::join(differing, ", "));
    if (!yes && !confirmed(fmt::format("Your version is saved first, in {}/. Reset?", backup_root().string()))) {
        fmt::print("reset cancelled: nothing changed\n");
        return 1;
    }

    const Backup backup = back_up(e);
    fmt::print("saved your version in {}/\n", backup.dir.string());
    for (const auto& file : differing) write_atomically(learner_path(e, file), stubs.at(file));

    std::error_code ec;
    fs::remove(report_path(e), ec);  // it graded the version now in the backup
    fmt::print("restored the stub of {}\nto get your version back: {}\n", fmt::join(differing, ", "),
               backup.restore_command);
    return 0;
}

}  // namespace

void add_reset_command(CLI::App& app, Action& action) {
    add_exercise_command(app, action, "reset",
                         "restore exercise N's stub, after saving your version to a timestamped backup", "--yes,-y",
                         "do not ask for confirmation", reset);
}

}  // namespace headwise::runner
