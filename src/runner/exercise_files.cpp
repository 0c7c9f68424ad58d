#include "exercise_files.hpp"

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

namespace {

// A temporary directory removed with its content at the end of the scope.
struct ScratchDir {
    fs::path path;
    ScratchDir() {
        std::string templ = (fs::temp_directory_path() / "headwise-stub-XXXXXX").string();
        if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("cannot create a temporary directory");
        path = templ;
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

bool is_marker(const std::string& line, const char* marker) {
    const auto first = line.find_first_not_of(" \t");
    const auto last = line.find_last_not_of(" \t\r");
    return first != std::string::npos && line.compare(first, last - first + 1, marker) == 0;
}

}  // namespace

std::map<std::string, std::string> pristine_stubs(const Exercise& e) {
    const fs::path script = source_dir() / "cmake" / "make_stub.cmake";
    if (!fs::exists(script)) throw std::runtime_error(fmt::format("cannot make stubs: {} is missing", script.string()));
    ScratchDir scratch;
    std::map<std::string, std::string> stubs;
    for (const auto& file : e.files) {
        const fs::path solution = solution_path(e, file);
        if (!fs::exists(solution)) throw std::runtime_error(fmt::format("the reference {} is missing", solution.string()));
        const fs::path out = scratch.path / fmt::format("{}.stub", stubs.size());
        const int rc = run_program({"cmake", "-DSOLUTION=" + solution.string(), "-DSTUB=" + out.string(), "-P", script.string()});
        const auto text = read_file(out);
        if (rc != 0 || !text) {
            throw std::runtime_error(fmt::format("cmake/make_stub.cmake failed on {} (exit code {})", solution.string(), rc));
        }
        stubs[file] = *text;
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
    std::istringstream in(solution_text);
    std::string out, line;
    bool in_stub = false;
    while (std::getline(in, line)) {
        const bool last = in.eof();  // the final line had no newline
        if (is_marker(line, "// BEGIN SOLUTION")) continue;
        if (is_marker(line, "// STUB")) {
            in_stub = true;
            continue;
        }
        if (is_marker(line, "// END SOLUTION")) {
            in_stub = false;
            continue;
        }
        if (!in_stub) out += last ? line : line + '\n';
    }
    return out;
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
