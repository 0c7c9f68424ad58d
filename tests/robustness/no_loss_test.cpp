// Nothing a learner wrote is lost, whenever `reset`, `watch` or `grade` is interrupted.
//
// reset and watch run as the real binary on a temporary course (HEADWISE_SOURCE_DIR /
// HEADWISE_BINARY_DIR; the real exercises/ is never touched) and are killed with SIGKILL -- no
// handler, no cleanup -- after delays spread over a whole run. After every kill each exercise
// file must be byte for byte the learner's version or the stub, never a mix or a prefix, and
// whenever a stub replaced the learner's version, a backup holding that version must exist.
// The learner's files are large (megabytes) so that the copies take long enough to be hit.
//
// grade runs for real on this build tree: the tree of exercises/ is checksummed before and after
// a complete grade and after grades killed part way, and must not change.
#include "../runner_test.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <set>
#include <thread>

using namespace headwise::test;
using namespace std::chrono_literals;

namespace {

const std::string header = "#pragma once\nint answer();\n";

// The learner's version of a file: `megabytes` of comment lines, every one different, so that a
// prefix or a mix of two versions can never compare equal to either.
std::string learner_version(const std::string& base, int megabytes, int round) {
    std::string s = base;
    for (int line = 0; s.size() < std::size_t(megabytes) << 20; ++line)
        s += fmt::format("// round {} line {}\n", round, line);
    return s;
}

struct Course {
    TempDir tmp;
    fs::path src = tmp / "source", build = tmp / "build", data = tmp / "data";
    fs::path cpp = src / "exercises/01_alpha/alpha.cpp", hpp = src / "exercises/01_alpha/alpha.hpp";

    Course() {
        write_text(src / "course.json", R"({"lessons": [{"number": 1, "name": "01_alpha", "title": "alpha",
            "exercise": {"id": "ex01", "dir": "01_alpha", "files": ["alpha.cpp", "alpha.hpp"]}}]})");
        write_text(src / "solutions/01_alpha/alpha.cpp", alpha_solution);
        write_text(src / "solutions/01_alpha/alpha.hpp", header);
        write_text(cpp, alpha_stub);
        write_text(hpp, header);
        // The grader stand-in `watch` starts: it takes a moment and writes its report in the build tree.
        write_text(build / "src" / "headwise",
                   "#!/bin/sh\nsleep 0.1\nmkdir -p \"$HEADWISE_BINARY_DIR/grade\"\n"
                   "echo '{\"id\":\"ex01\",\"compiled\":true,\"passed\":0,\"total\":1,\"failures\":[]}' > "
                   "\"$HEADWISE_BINARY_DIR/grade/ex01.json\"\n");
        fs::permissions(build / "src" / "headwise", fs::perms::owner_all);
        fs::create_directories(data);
    }
    Env env() const { return sandbox_env(src, build, data, tmp / "home"); }
    // The content of every file under the backup root that is new or changed since the last call.
    // (Reading them all every round made the test quadratic: 25 rounds of 8 MB each, minutes
    // under ASan. An older backup holds an older round's text, so it can never match anyway.)
    std::vector<std::string> new_backups() {
        std::vector<std::string> out;
        if (!fs::exists(data / "headwise/backups")) return out;
        for (const auto& f : fs::recursive_directory_iterator(data / "headwise/backups"))
            if (f.is_regular_file() && seen_backups
                                           .insert(fmt::format("{} {} {}", f.path().string(), f.file_size(),
                                                               f.last_write_time().time_since_epoch().count()))
                                           .second)
                out.push_back(read_text(f.path()));
        return out;
    }
    std::set<std::string> seen_backups;
};

// Runs `args` and kills it with SIGKILL after `delay` (if it is still running). Returns the exit code.
int run_killed_after(const Course& c, const std::vector<std::string>& args, std::chrono::microseconds delay) {
    TempDir io;
    Process p(args, c.env(), io.path, std::nullopt);
    std::this_thread::sleep_for(delay);
    p.signal(SIGKILL);
    return p.wait(10s).code;
}

std::chrono::microseconds time_of(const std::function<void()>& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
}

// A checksum of every regular file under `dir` (path and content), FNV-1a over both.
std::uint64_t tree_checksum(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& f : fs::recursive_directory_iterator(dir))
        if (f.is_regular_file()) files.push_back(f.path());
    std::sort(files.begin(), files.end());
    std::uint64_t h = 1469598103934665603ULL;
    auto mix = [&h](const std::string& s) {
        for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    };
    for (const auto& f : files) {
        mix(fs::relative(f, dir).string());
        mix(read_text(f));
    }
    return h;
}

}  // namespace

TEST_CASE("reset killed at any moment leaves each file the learner's or the stub, and a stub only after its backup",
          "[no loss][reset]") {
    Course c;
    // Two uninterrupted resets (the faster counts: the first may pay for cold caches), to know
    // how long the whole thing takes on this machine.
    auto whole = std::chrono::microseconds::max();
    for (int warm = 0; warm < 2; ++warm) {
        write_text(c.cpp, learner_version(alpha_stub, 4, -1 - warm));
        write_text(c.hpp, learner_version(header, 4, -1 - warm));
        whole = std::min(whole, time_of([&] { REQUIRE(run_headwise({"reset", "1", "--yes"}, c.env()).code == 0); }));
        REQUIRE(read_text(c.cpp) == alpha_stub);
    }

    std::mt19937 rng(2024);
    std::uniform_int_distribution<long long> when(0, whole.count() * 5 / 4);
    int killed_mid_way = 0, stubs_seen = 0;
    constexpr int rounds = 25;
    for (int round = 1; round <= rounds; ++round) {
        const std::string mine_cpp = learner_version(alpha_stub, 4, round),
                          mine_hpp = learner_version(header, 4, round);
        write_text(c.cpp, mine_cpp);
        write_text(c.hpp, mine_hpp);
        const auto delay = std::chrono::microseconds(when(rng));
        const int code = run_killed_after(c, {"reset", "1", "--yes"}, delay);
        killed_mid_way += code == 128 + SIGKILL;
        INFO("round " << round << ", killed after " << delay.count() << " us, exit " << code);
        const std::string now_cpp = read_text(c.cpp), now_hpp = read_text(c.hpp);
        CHECK((now_cpp == mine_cpp || now_cpp == alpha_stub));
        CHECK((now_hpp == mine_hpp || now_hpp == header));
        const auto backups = c.new_backups();
        if (now_cpp == alpha_stub) {  // the learner's version was replaced: it must be in a backup
            ++stubs_seen;
            CHECK(std::count(backups.begin(), backups.end(), mine_cpp) == 1);
        }
        if (now_hpp == header) CHECK(std::count(backups.begin(), backups.end(), mine_hpp) == 1);
    }
    // The kills must really have landed inside resets, and on both sides of the restore.
    std::printf("reset killed mid-way %d of %d times; %d times after the stub was in place\n", killed_mid_way, rounds,
                stubs_seen);
    CHECK(killed_mid_way >= rounds / 3);
    CHECK(stubs_seen < rounds);
}

TEST_CASE("watch killed while it re-grades changes nothing under exercises/", "[no loss][watch]") {
    Course c;
    write_text(c.cpp, learner_version(alpha_stub, 1, 0));
    std::mt19937 rng(7);
    for (int round = 0; round < 6; ++round) {
        const std::uint64_t before = tree_checksum(c.src / "exercises");
        TempDir io;
        Process watch({"watch", "1", "--interval", "50"}, c.env(), io.path, std::nullopt);
        std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 400));  // at a grade, or between
        watch.signal(SIGKILL);
        watch.wait(10s);
        CHECK(tree_checksum(c.src / "exercises") == before);
        // The learner saves again (by rename, as editors do) before the next round.
        const std::string next = learner_version(alpha_stub, 1, round + 1);
        write_text(c.src / "exercises/01_alpha/.alpha.cpp.swp", next);
        fs::rename(c.src / "exercises/01_alpha/.alpha.cpp.swp", c.cpp);
    }
}

#ifdef HEADWISE_REAL_SOURCE_DIR
TEST_CASE("grading never writes into exercises/, whole or killed part way", "[no loss][grade]") {
    // The real runner on this very build tree and the real exercises/, as a learner runs it.
    const fs::path exercises = fs::path(HEADWISE_REAL_SOURCE_DIR) / "exercises";
    const Env env{{"HEADWISE_SOURCE_DIR", HEADWISE_REAL_SOURCE_DIR}, {"HEADWISE_BINARY_DIR", HEADWISE_REAL_BINARY_DIR}};
    const std::uint64_t before = tree_checksum(exercises);
    TempDir whole_io;
    Process whole_grade({"grade", "1"}, env, whole_io.path, std::nullopt);
    const Result whole = whole_grade.wait(600s);  // the first grade in a fresh tree builds the grader
    INFO("grade 1: exit " << whole.code << "\n" << whole.out << whole.err);
    CHECK((whole.code == 0 || whole.code == 1));  // passed or not: graded either way
    CHECK(tree_checksum(exercises) == before);
    for (const auto delay : {300ms, 1500ms}) {
        TempDir io;
        Process p({"grade", "1"}, env, io.path, std::nullopt);
        std::this_thread::sleep_for(delay);
        p.signal(SIGKILL);
        p.wait(30s);
        CHECK(tree_checksum(exercises) == before);
    }
}
#endif
