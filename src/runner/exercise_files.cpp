#include "exercise_files.hpp"

#include "gradekit/stub.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace headwise::runner {

fs::path learner_path(const Exercise& e, const std::string& file) { return source_dir() / "exercises" / e.dir / file; }
fs::path solution_path(const Exercise& e, const std::string& file) { return source_dir() / "solutions" / e.dir / file; }

std::optional<std::string> read_file(const fs::path& p) {
    std::error_code ec;
    if (!fs::exists(p, ec)) return std::nullopt;
    std::ifstream in(p, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("cannot read {}: {}", p.string(), std::strerror(errno)));
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::map<std::string, std::string> pristine_stubs(const Exercise& e) {
    std::map<std::string, std::string> stubs;
    for (const auto& file : e.files) {
        const fs::path solution = solution_path(e, file);
        const auto text = read_file(solution);
        if (!text) throw std::runtime_error(fmt::format("the reference {} is missing", solution.string()));
        stubs[file] = gradekit::split_solution(*text, solution.string()).stub;
    }
    return stubs;
}

bool is_pristine(const Exercise& e, const std::map<std::string, std::string>& stubs) {
    for (const auto& file : e.files) {
        const auto mine = read_file(learner_path(e, file));
        const auto it = stubs.find(file);
        if (!mine || it == stubs.end() || *mine != it->second) return false;
    }
    return true;
}

std::string solution_view(const std::string& solution_text) {
    return gradekit::split_solution(solution_text, "the solution").solution;
}

void write_atomically(const fs::path& target, const std::string& bytes) {
    const fs::path dir = target.parent_path();
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::string templ = (dir / fmt::format(".{}.headwise-XXXXXX", target.filename().string())).string();
    const int fd = mkstemp(templ.data());
    if (fd < 0) throw std::runtime_error(fmt::format("cannot write in {}: {}", dir.string(), std::strerror(errno)));
    const fs::path temp = templ;
    auto fail = [&](const std::string& why) {
        ::close(fd);
        fs::remove(temp, ec);
        throw std::runtime_error(fmt::format("cannot write {}: {}", target.string(), why));
    };
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(n < 0 ? std::strerror(errno) : "short write");
        done += static_cast<std::size_t>(n);
    }
    // Keep the permissions of the file being replaced (mkstemp makes 0600).
    const auto perms = fs::exists(target, ec) ? fs::status(target, ec).permissions() : fs::perms(0644);
    if (::fchmod(fd, static_cast<mode_t>(perms)) != 0 || ::fsync(fd) != 0) fail(std::strerror(errno));
    if (::close(fd) != 0) {
        fs::remove(temp, ec);
        throw std::runtime_error(fmt::format("cannot write {}: {}", target.string(), std::strerror(errno)));
    }
    fs::rename(temp, target, ec);
    if (ec) {
        const std::string why = ec.message();
        fs::remove(temp, ec);
        throw std::runtime_error(fmt::format("cannot replace {}: {}", target.string(), why));
    }
}

}  // namespace headwise::runner
