// tests for the runner's learner commands (list, run next, hint, watch, reset, solution), run as
// the real binary against a small course tree made in a temporary directory (pointed to with
// HEADWISE_SOURCE_DIR / HEADWISE_BINARY_DIR): the real exercises/ is never touched. The runner
// makes stubs with the one stub generator (src/gradekit/stub.hpp); the expected stubs and solution
// views below are written by hand from the solution files, not produced by the code under test.
#include "runner_test.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

using namespace headwise::test;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

const std::string alpha_view = R"(// alpha.cpp -- exercise 01
int answer() {
    return 42;  // the secret answer
}
)";
const std::string beta_solution = R"(#include "beta.hpp"
int twice(int x) {
    // BEGIN SOLUTION
    return 2 * x;
    // STUB
    return 0;
    // END SOLUTION
}
)";
const std::string beta_stub = R"(#include "beta.hpp"
int twice(int x) {
    return 0;
}
)";
const std::string beta_header = "#pragma once\nint twice(int x);\n";
const std::string hints_md = R"(# Hints for exercise 01

## Hint 1
Look at lesson 01, step 3.

## Hint 2
The answer is a number.

## Hint 3
<!-- when failing: the product; times seven -->
It is six times seven.
)";

std::string course_json(bool with_delta = false) {
    std::string delta = with_delta ? R"(,
    {"number": 4, "name": "04_delta", "title": "delta, added by one catalogue entry"})"
                                   : "";
    return R"({
  "lessons": [
    {"number": 1, "name": "01_alpha", "title": "alpha the first",
     "exercise": {"id": "ex01", "dir": "01_alpha", "files": ["alpha.cpp"], "hints": "exercises/01_alpha/HINTS.md"}},
    {"number": 2, "name": "02_beta", "title": "beta the second",
     "exercise": {"id": "ex02", "dir": "02_beta", "files": ["beta.cpp", "beta.hpp"]}},
    {"number": 3, "name": "03_gamma", "title": "gamma without exercise"})" +
           delta + R"(
  ]
})";
}

void write_script(const fs::path& p, const std::string& text) {
    write_text(p, text);
    fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
}

std::string report(bool compiled, int passed, int total) {
    std::string failures;
    for (int i = passed; i < total; ++i) {
        failures += fmt::format(R"({}{{"test":"case {}","message":"wrong","mistake":null,"explanation":""}})",
                                failures.empty() ? "" : ",", i);
    }
    return fmt::format(R"({{"id":"exNN","compiled":{},"passed":{},"total":{},"failures":[{}]}})", compiled, passed,
                       total, failures);
}

// A course of three lessons (two with exercises) in source/, a build tree in build/ with fake
// lesson programs and a fake `src/headwise` that records each `grade` call, and a private home.
struct Course {
    TempDir tmp;
    fs::path src = tmp / "source", build = tmp / "build", data = tmp / "data";

    Course() {
        write_text(src / "course.json", course_json());
        write_text(src / "solutions/01_alpha/alpha.cpp", alpha_solution);
        write_text(src / "exercises/01_alpha/alpha.cpp", alpha_stub);
        write_text(src / "exercises/01_alpha/HINTS.md", hints_md);
        write_text(src / "solutions/02_beta/beta.cpp", beta_solution);
        write_text(src / "solutions/02_beta/beta.hpp", beta_header);
        write_text(src / "exercises/02_beta/beta.cpp", beta_stub);
        write_text(src / "exercises/02_beta/beta.hpp", beta_header);
        for (const char* name : {"01_alpha", "02_beta", "03_gamma"}) {
            write_script(build / "lessons" / name, fmt::format("#!/bin/sh\necho \"lesson {} ran $*\"\n", name));
        }
        // The grader stand-in: logs the call and leaves a failing report, as the real one would.
        write_script(build / "src" / "headwise",
                     "#!/bin/sh\necho \"$*\" >> \"$HEADWISE_BINARY_DIR/grade-calls.log\"\n"
                     "mkdir -p \"$HEADWISE_BINARY_DIR/grade\"\n"
                     "echo '" +
                         report(true, 1, 2) + "' > \"$HEADWISE_BINARY_DIR/grade/ex0$2.json\"\n");
        fs::create_directories(data);
    }

    Env env() const { return sandbox_env(src, build, data, tmp / "home"); }
    Result run(const std::vector<std::string>& args, const std::optional<std::string>& input = std::nullopt) const {
        return run_headwise(args, env(), input);
    }
    void grade_report(const std::string& id, bool compiled, int passed, int total) const {
        write_text(build / "grade" / (id + ".json"), report(compiled, passed, total));
    }
    fs::path alpha() const { return src / "exercises/01_alpha/alpha.cpp"; }
    std::vector<fs::path> backups() const {
        std::vector<fs::path> out;
        if (fs::exists(data / "headwise" / "backups"))
            for (const auto& d : fs::directory_iterator(data / "headwise" / "backups")) out.push_back(d.path());
        return out;
    }
    std::size_t grade_calls() const {
        const std::string log = read_text(build / "grade-calls.log");
        return static_cast<std::size_t>(std::count(log.begin(), log.end(), '\n'));
    }
};

// The line of `out` that starts with `prefix` ("" if none).
std::string line_of(const std::string& out, const std::string& prefix) {
    std::size_t at = out.rfind("\n" + prefix);
    if (out.rfind(prefix, 0) == 0)
        at = 0;
    else if (at == std::string::npos)
        return "";
    else
        ++at;
    return out.substr(at, out.find('\n', at) - at);
}

// Waits until `done()` or `limit` passes; returns whether done() became true.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(50ms);
    }
    return done();
}

}  // namespace

TEST_CASE("list shows every lesson in catalogue order with its exercise status", "[runner][list]") {
    Course c;
    Result r = c.run({"list"});
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(line_of(r.out, "01"), Contains("alpha the first") && Contains("ex01") && Contains("not started"));
    CHECK_THAT(line_of(r.out, "02"), Contains("beta the second") && Contains("ex02") && Contains("not started"));
    CHECK_THAT(line_of(r.out, "03"), Contains("gamma without exercise") && Contains("(no exercise)"));
    CHECK(r.out.find("\n01") < r.out.find("\n02"));
    CHECK(r.out.find("\n02") < r.out.find("\n03"));
    CHECK_THAT(r.out, Contains("progress [..............................] 0 of 2 exercises passed"));
    CHECK_THAT(line_of(r.out, "next:"), Contains("lesson 01"));

    c.grade_report("ex01", true, 5, 5);
    write_text(c.src / "exercises/02_beta/beta.cpp", "int twice(int x) { return x + x; }\n");
    r = c.run({"list"});
    CHECK_THAT(line_of(r.out, "01"), Contains("passed"));
    CHECK_THAT(line_of(r.out, "02"), Contains("edited, not graded yet"));
    CHECK_THAT(r.out, Contains("] 1 of 2 exercises passed"));
    CHECK_THAT(line_of(r.out, "next:"), Contains("lesson 02"));

    c.grade_report("ex02", true, 3, 5);
    CHECK_THAT(line_of(c.run({"list"}).out, "02"), Contains("failing: 3 of 5 tests pass") && !Contains("edited since"));
    fs::last_write_time(c.src / "exercises/02_beta/beta.cpp", fs::file_time_type::clock::now() + 1h);
    CHECK_THAT(line_of(c.run({"list"}).out, "02"),
               Contains("failing: 3 of 5 tests pass (edited since the last grade)"));
    c.grade_report("ex02", false, 0, 0);
    CHECK_THAT(line_of(c.run({"list"}).out, "02"), Contains("does not compile"));

    c.grade_report("ex02", true, 5, 5);
    r = c.run({"list"});
    CHECK_THAT(r.out, Contains("[##############################] 2 of 2 exercises passed"));
    CHECK_THAT(line_of(r.out, "next:"), Contains("every exercise passes"));
}

TEST_CASE("list takes its lessons from the catalogue: one entry adds a lesson", "[runner][list]") {
    Course c;
    write_text(c.src / "course.json", course_json(true));
    const Result r = c.run({"list"});
    CHECK_THAT(line_of(r.out, "04"), Contains("delta, added by one catalogue entry"));
}

TEST_CASE("list never cuts a title, however long", "[runner][list]") {
    Course c;
    std::string json = course_json();
    const std::string long_title =
        "gamma without exercise, with a title as long as lesson 06's: naive, online softmax, tiled (GPU or CPU "
        "emulator)";
    json.replace(json.find("gamma without exercise"), std::string("gamma without exercise").size(), long_title);
    write_text(c.src / "course.json", json);
    const Result r = c.run({"list"});
    CHECK_THAT(line_of(r.out, "03"), Contains(long_title));
    CHECK_THAT(line_of(r.out, "03"), !Contains("..."));
}

TEST_CASE("list counts an exercise still equal to its stub as not started, whatever an old report says",
          "[runner][list]") {
    Course c;
    c.grade_report("ex01", true, 0, 3);  // graded while still the stub: still "not started"
    CHECK_THAT(line_of(c.run({"list"}).out, "01"), Contains("not started"));
}

TEST_CASE("run next runs the first lesson whose exercise has not passed", "[runner][run]") {
    Course c;
    Result r = c.run({"run", "next", "--", "--seq", "8"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("lesson 01_alpha ran --seq 8"));
    CHECK_THAT(r.out, Contains("./headwise watch 1"));

    c.grade_report("ex01", true, 2, 2);
    r = c.run({"run", "next"});
    CHECK_THAT(r.out, Contains("lesson 02_beta ran") && !Contains("01_alpha ran"));

    c.grade_report("ex02", true, 4, 4);
    r = c.run({"run", "next"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("every exercise passes") && !Contains(" ran"));
}

TEST_CASE("hint reveals one more hint per call, and --all shows every one", "[runner][hint]") {
    Course c;
    Result r = c.run({"hint", "1"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("hint 1 of 3") && Contains("Look at lesson 01, step 3.") && !Contains("a number"));
    CHECK_THAT(r.out, !Contains("# Hints for exercise 01"));

    r = c.run({"hint", "1"});
    CHECK_THAT(r.out, Contains("hint 2 of 3") && Contains("The answer is a number.") && !Contains("step 3"));
    r = c.run({"hint", "01"});
    CHECK_THAT(r.out, Contains("hint 3 of 3") && Contains("six times seven") && Contains("that was the last hint"));
    r = c.run({"hint", "1"});
    CHECK_THAT(r.out, Contains("hint 3 of 3") && Contains("all 3 hints were shown already"));
    CHECK_THAT(line_of(c.run({"list"}).out, "01"), Contains("[3 hints used]"));

    r = c.run({"hint", "1", "--all"});
    CHECK_THAT(r.out, Contains("step 3") && Contains("a number") && Contains("six times seven"));

    // The state file only counts hints: deleting it starts the counter again, nothing else.
    REQUIRE(fs::exists(c.build / "headwise-progress.json"));
    fs::remove(c.build / "headwise-progress.json");
    CHECK_THAT(c.run({"hint", "1"}).out, Contains("hint 1 of 3"));
    CHECK_FALSE(fs::exists(c.src / "exercises/01_alpha/headwise-progress.json"));
}

TEST_CASE("hint shows first the one about the check the last grade failed, then the rest in order", "[runner][hint]") {
    Course c;
    write_text(c.build / "grade" / "ex01.json",
               R"({"id":"ex01","compiled":true,"finished":true,"passed":1,"total":2,"failures":[)"
               R"({"test":"alpha: the product of two numbers","message":"got 41, expected 42","mistake":null}]})");
    Result r = c.run({"hint", "1"});
    CHECK_THAT(r.out, Contains("your last grade failed \"alpha: the product of two numbers\": hint 3 is about that") &&
                          Contains("hint 3 of 3") && Contains("six times seven"));
    CHECK_THAT(r.out, !Contains("when failing") && !Contains("step 3"));
    // That hint shown, the others follow in their order; the grade row points at the keyed hint.
    r = c.run({"hint", "1"});
    CHECK_THAT(r.out, Contains("hint 1 of 3") && !Contains("your last grade failed"));
    CHECK_THAT(c.run({"hint", "1"}).out, Contains("hint 2 of 3") && Contains("that was the last hint"));
    CHECK_THAT(line_of(c.run({"list"}).out, "01"), Contains("[3 hints used]"));
}

TEST_CASE("hint for an exercise without a hints file says so", "[runner][hint]") {
    Course c;
    const Result r = c.run({"hint", "2"});
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Contains("no hints yet"));
}

TEST_CASE("reset asks first, and without a yes changes nothing", "[runner][reset]") {
    Course c;
    write_text(c.alpha(), "int answer() { return 41; }  // my work\n");
    for (const std::optional<std::string>& input :
         {std::optional<std::string>(), std::optional<std::string>("n\n"), std::optional<std::string>("\n")}) {
        const Result r = c.run({"reset", "1"}, input);
        CHECK(r.code == 1);
        CHECK_THAT(r.out, Contains("[y/N]") && Contains("nothing changed"));
        CHECK(read_text(c.alpha()) == "int answer() { return 41; }  // my work\n");
        CHECK(c.backups().empty());
    }
}

TEST_CASE("reset saves the learner's version to a named backup, then restores the stub", "[runner][reset]") {
    Course c;
    const std::string mine = "int answer() { return 41; }  // my work\n";
    write_text(c.alpha(), mine);
    c.grade_report("ex01", true, 0, 2);

    const Result r = c.run({"reset", "1"}, std::string("y\n"));
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    CHECK(read_text(c.alpha()) == alpha_stub);
    const auto backups = c.backups();
    REQUIRE(backups.size() == 1);
    CHECK(read_text(backups[0] / "alpha.cpp") == mine);
    CHECK_THAT(backups[0].filename().string(), Catch::Matchers::StartsWith("ex01-"));
    CHECK_THAT(r.out, Contains(backups[0].string()));
    CHECK_FALSE(fs::exists(c.build / "grade" / "ex01.json"));  // it graded the version now in the backup
    // No temporary file is left beside the exercise.
    CHECK(std::distance(fs::directory_iterator(c.src / "exercises/01_alpha"), fs::directory_iterator()) == 2);
}

TEST_CASE("reset never loses work: every reset keeps its own backup", "[runner][reset]") {
    Course c;
    write_text(c.alpha(), "version one\n");
    REQUIRE(c.run({"reset", "1", "--yes"}).code == 0);
    write_text(c.alpha(), "version two\n");
    REQUIRE(c.run({"reset", "1", "-y"}).code == 0);
    const auto backups = c.backups();
    REQUIRE(backups.size() == 2);
    std::vector<std::string> kept{read_text(backups[0] / "alpha.cpp"), read_text(backups[1] / "alpha.cpp")};
    std::sort(kept.begin(), kept.end());
    CHECK(kept == std::vector<std::string>{"version one\n", "version two\n"});
    CHECK(read_text(c.alpha()) == alpha_stub);
}

TEST_CASE("reset restores every differing file of a multi-file exercise, including a deleted one", "[runner][reset]") {
    Course c;
    fs::remove(c.src / "exercises/02_beta/beta.hpp");
    write_text(c.src / "exercises/02_beta/beta.cpp", "mine\n");
    const Result r = c.run({"reset", "2", "--yes"});
    REQUIRE(r.code == 0);
    CHECK(read_text(c.src / "exercises/02_beta/beta.cpp") == beta_stub);
    CHECK(read_text(c.src / "exercises/02_beta/beta.hpp") == beta_header);  // headers: the solution's, verbatim
    CHECK(read_text(c.backups().at(0) / "beta.cpp") == "mine\n");
}

TEST_CASE("reset of an untouched exercise changes nothing and makes no backup", "[runner][reset]") {
    Course c;
    const Result r = c.run({"reset", "1", "--yes"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("already the pristine stub"));
    CHECK(c.backups().empty());
}

TEST_CASE("reset touches nothing when the backup cannot be written", "[runner][reset]") {
    Course c;
    write_text(c.alpha(), "my work\n");
    write_text(c.tmp / "not-a-dir", "a file where the backup directory should go\n");
    Env env = c.env();
    env["XDG_DATA_HOME"] = (c.tmp / "not-a-dir").string();
    const Result r = run_headwise({"reset", "1", "--yes"}, env);
    CHECK(r.code != 0);
    CHECK_THAT(r.err, Contains("nothing was reset"));
    CHECK(read_text(c.alpha()) == "my work\n");
}

TEST_CASE("reset touches nothing when the stub cannot be made", "[runner][reset]") {
    Course c;
    write_text(c.alpha(), "my work\n");
    write_text(c.src / "solutions/01_alpha/alpha.cpp", "int f() {\n// BEGIN SOLUTION\nreturn 1;\n}\n");  // never closed
    const Result r = c.run({"reset", "1", "--yes"});
    CHECK(r.code != 0);
    CHECK(read_text(c.alpha()) == "my work\n");
    CHECK(c.backups().empty());
}

TEST_CASE("solution is refused until the exercise passes, and --force says what it reveals", "[runner][solution]") {
    Course c;
    Result r = c.run({"solution", "1"});
    CHECK(r.code == 1);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Contains("has not passed yet") && Contains("--force"));
    CHECK_THAT(r.out + r.err, !Contains("secret"));

    c.grade_report("ex01", true, 1, 2);
    CHECK_THAT(c.run({"solution", "1"}).err, Contains("passed 1 of 2 tests"));

    r = c.run({"solution", "1", "--force"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out,
               Contains("--force: this shows the complete reference answer to exercise 01") && Contains("alpha.cpp"));
    CHECK_THAT(r.out, Contains(alpha_view));
    CHECK_THAT(r.out, !Contains("BEGIN SOLUTION") && !Contains("// STUB") && !Contains("TODO(ex01)"));

    c.grade_report("ex01", true, 2, 2);
    r = c.run({"solution", "1"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains(alpha_view) && !Contains("--force"));
}

TEST_CASE("watch re-grades within seconds of a save, in place or by rename, and Ctrl-C stops it", "[runner][watch]") {
    Course c;
    TempDir io;
    Process watch({"watch", "1", "--interval", "100"}, c.env(), io.path, std::nullopt);
    REQUIRE(eventually([&] { return c.grade_calls() == 1; }, 20s));  // graded once at the start
    CHECK(read_text(c.build / "grade-calls.log") == "grade 1\n");

    std::this_thread::sleep_for(1100ms);                        // a new modification time even on coarse clocks
    write_text(c.alpha(), "int answer() { return 6 * 7; }\n");  // saved in place
    CHECK(eventually([&] { return c.grade_calls() == 2; }, 5s));

    std::this_thread::sleep_for(1100ms);
    write_text(c.tmp / "alpha.cpp.swp", "int answer() { return 42; }\n");  // saved the way vim does
    fs::rename(c.tmp / "alpha.cpp.swp", c.alpha());
    CHECK(eventually([&] { return c.grade_calls() == 3; }, 5s));
    CHECK_THAT(watch.output_so_far(), Contains("1 of 2 tests pass") && Contains("saved: alpha.cpp"));

    watch.signal(SIGINT);
    const Result r = watch.wait(10s);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("watch: stopped"));
    CHECK(c.grade_calls() == 3);
}

TEST_CASE("watch without a number watches the first exercise not yet passed", "[runner][watch]") {
    Course c;
    c.grade_report("ex01", true, 3, 3);
    TempDir io;
    Process watch({"watch"}, c.env(), io.path, std::nullopt);
    REQUIRE(eventually([&] { return c.grade_calls() == 1; }, 20s));
    CHECK(read_text(c.build / "grade-calls.log") == "grade 2\n");
    watch.signal(SIGINT);
    CHECK(watch.wait(10s).code == 0);
}

TEST_CASE("runner commands answer a bad lesson or exercise number with one line and exit 2", "[runner][bad input]") {
    Course c;
    const std::vector<std::vector<std::string>> cases{
        {"run", "9"},      {"run"},           {"hint", "9"},           {"hint", "abc"},
        {"hint", "3"},     {"reset", "9"},    {"reset", "3", "--yes"}, {"solution", "9"},
        {"solution", "3"}, {"watch", "9"},    {"watch", "3"},          {"hint"},
        {"reset"},         {"list", "extra"}, {"no-such-command"},     {"watch", "1", "--interval", "0"}};
    for (const auto& args : cases) {
        std::string joined;
        for (const auto& a : args) joined += a + " ";
        INFO("headwise " << joined);
        const Result r = c.run(args);
        INFO("stderr: " << r.err);
        CHECK(r.code == 2);
        CHECK(r.err_lines() == 1);
    }
    CHECK_THAT(c.run({"hint", "3"}).err, Contains("lesson 3 has no exercise (the exercises are 1, 2)"));
    CHECK_THAT(c.run({"reset", "9"}).err, Contains("no lesson '9'"));
}

TEST_CASE(
    "bench refuses a bad --threads list, HEADWISE_THREADS or HEADWISE_ISA with one line and exit 2, before building",
    "[runner][bad input]") {
    Course c;
    for (const std::string bad : {"0", "1,1", "two", "2,,4", "1025"}) {
        const Result r = c.run({"bench", "--threads", bad});
        INFO("--threads " << bad << ", stderr: " << r.err);
        CHECK(r.code == 2);
        CHECK(r.err_lines() == 1);
        CHECK_THAT(r.err, Contains("--threads") && Contains("'" + bad + "'"));
        CHECK_THAT(r.out, !Contains("building"));
    }
    // OpenBLAS held to its oldest kernels: a warning that bench prints on any x86-64, which must not
    // come before (or with) the one line about the bad variable.
    const Result r = run_headwise({"bench"}, {{"HEADWISE_THREADS", "lots"}, {"OPENBLAS_CORETYPE", "Prescott"}});
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Contains("HEADWISE_THREADS") && Contains("'lots'"));
    CHECK_THAT(r.out, !Contains("building"));
    const Result isa = run_headwise({"bench"}, {{"HEADWISE_ISA", "sse2"}, {"OPENBLAS_CORETYPE", "Prescott"}});
    INFO("stderr: " << isa.err);
    CHECK(isa.code == 2);
    CHECK(isa.err_lines() == 1);
    CHECK_THAT(isa.err, Contains("HEADWISE_ISA=sse2"));
    CHECK_THAT(isa.out, !Contains("building"));
}

namespace {

// A stand-in for `cmake`, first on PATH: prints two of ninja's progress lines for `target`'s build
// and exits with `rc`.
void fake_cmake(const fs::path& bin, const std::string& object, const std::string& target, int rc) {
    write_script(bin / "cmake", fmt::format("#!/bin/sh\necho '[1/2] Building CXX object {}'\nsleep 0.2\n"
                                            "echo '[2/2] Linking CXX executable {}'\nexit {}\n",
                                            object, target, rc));
}

// Runs `command` (a shell command line) on a pseudo-terminal, as from a learner's shell: script(1)
// from util-linux (Debian's bsdutils, always installed) passes its output through.
Result run_on_a_terminal(const std::string& command, const Env& env) {
    TempDir io;
    Process p({"-qefc", command, "/dev/null"}, env, io.path, std::nullopt, "/usr/bin/script");
    return p.wait();
}

}  // namespace

TEST_CASE("grade says it builds first, and on a terminal shows the step it is building", "[runner][grade][progress]") {
    Course c;
    // The build fails after its two lines: the grade then reports "does not compile", no grader runs.
    fake_cmake(c.tmp / "bin", "tests/grade/CMakeFiles/headwise_grade_ex01.dir/alpha.cpp.o",
               "tests/grade/headwise_grade_ex01", 1);
    Env env = c.env();
    env["PATH"] = (c.tmp / "bin").string() + ":/usr/bin:/bin";
    SECTION("on a terminal: ninja's current step, on one line rewritten in place") {
        const Result r = run_on_a_terminal(std::string(HEADWISE_RUNNER_EXE) + " grade 1", env);
        CHECK_THAT(r.out, Contains("headwise: grading exercise ex01 (building what changed first)"));
        CHECK_THAT(r.out, Contains("\r\033[K  ex01 building: [1/2] Building CXX object tests/grade/"));
        CHECK_THAT(r.out, Contains("\r\033[K  ex01 building: [2/2] Linking CXX executable"));
        CHECK_THAT(r.out, Contains("does not compile"));
    }
    SECTION("piped: the line that says it builds, and no terminal control characters") {
        const Result r = c.run({"grade", "1"});
        CHECK_THAT(r.out, Contains("headwise: grading exercise ex01 (building what changed first)"));
        CHECK(r.out.find('\r') == std::string::npos);
        CHECK(r.out.find("[1/2]") == std::string::npos);
    }
}

TEST_CASE("test prints the failures in full and the summary, not the passing tests or the build", "[runner][test]") {
    Course c;
    // Stand-ins: a build with a warning of its own, and ctest's output for a pass, a failure with
    // its output, a skip and the summary.
    write_script(c.tmp / "bin" / "cmake",
                 "#!/bin/sh\necho '[1/2] Building CXX object tests/a.cpp.o'\necho 'a.cpp:1:1: warning: unused'\n"
                 "echo '[2/2] Linking CXX executable tests/a'\n");
    write_script(c.tmp / "bin" / "ctest",
                 "#!/bin/sh\necho \"ctest $*\" > \"$HEADWISE_BINARY_DIR/ctest-args\"\n"
                 "echo 'Test project /somewhere/build'\n"
                 "echo '    Start 1: softmax rows sum to one'\n"
                 "echo '1/3 Test #1: softmax rows sum to one .........   Passed    0.01 sec'\n"
                 "echo '    Start 2: attention is causal'\n"
                 "echo '2/3 Test #2: attention is causal ..............***Failed    0.02 sec'\n"
                 "echo 'expected 1, got 2'\n"
                 "echo '3/3 Test #3: needs the model ..................***Skipped   0.00 sec'\n"
                 "echo ''\necho '67% tests passed, 1 tests failed out of 3'\necho ''\n"
                 "echo 'Label Time Summary:'\necho 'unit    =   0.03 sec*proc (3 tests)'\necho ''\n"
                 "echo 'The following tests FAILED:'\necho '  2 - attention is causal (Failed)'\nexit 8\n");
    Env env = c.env();
    env["PATH"] = (c.tmp / "bin").string() + ":/usr/bin:/bin";
    env["HEADWISE_THREADS"] = "3";
    const Result r = run_headwise({"test", "--", "-R", "a"}, env);
    CHECK(r.code == 8);
    CHECK_THAT(r.out, Contains("attention is causal ..............***Failed") && Contains("expected 1, got 2") &&
                          Contains("67% tests passed, 1 tests failed out of 3") &&
                          Contains("The following tests FAILED:") && Contains("the build printed 1 compiler warning"));
    CHECK_THAT(r.out, !Contains("Passed") && !Contains("Start 1") && !Contains("Skipped") && !Contains("[1/2]") &&
                          !Contains("warning: unused") && !Contains("Label Time"));
    CHECK_THAT(read_text(c.build / "ctest-args"), Contains("ctest --preset default -j 3 -R a"));
    CHECK_THAT(read_text(c.build / ".test-build.log"), Contains("a.cpp:1:1: warning: unused"));
}

namespace {
// A copy of the real ./headwise script in a scratch root whose set-up scripts, configured build
// tree and runner are stand-ins (the runner echoes its arguments); cmake is each test's own.
void stand_in_root(const fs::path& root) {
    fs::copy_file(fs::path(HEADWISE_TEST_SOURCE_DIR) / "headwise", root / "headwise");
    fs::permissions(root / "headwise", fs::perms::owner_all);
    write_script(root / "scripts" / "install-deps", "#!/bin/sh\nexit 0\n");
    write_script(root / "scripts" / "fetch-model", "#!/bin/sh\nexit 0\n");
    write_text(root / "build" / "CMakeCache.txt", "");
    write_text(root / "build" / "build.ninja", "");
    write_script(root / "build" / "src" / "headwise", "#!/bin/sh\necho \"the runner ran: $*\"\n");
}
}  // namespace

TEST_CASE("./headwise announces no build when nothing is built (ninja only re-checks its globs)",
          "[runner][run][progress]") {
    // The same stand-ins, but cmake has nothing to do: ninja prints its glob check and "no work
    // to do", which must not read as a build of "the runner and the lessons".
    TempDir root;
    stand_in_root(root.path);
    write_script(root / "bin" / "cmake",
                 "#!/bin/sh\necho '[0/2] Re-checking globbed directories...'\necho 'ninja: no work to do.'\n");
    const Env env{{"PATH", (root / "bin").string() + ":/usr/bin:/bin"}, {"HOME", (root / "home").string()}};
    const Result r = run_on_a_terminal((root / "headwise").string() + " run all", env);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, !Contains("building the runner and the lessons"));
    CHECK_THAT(r.out, Contains("the runner ran: run all"));
}

TEST_CASE("./headwise says what it builds before running, and on a terminal shows each build step",
          "[runner][run][progress]") {
    // What is tested is the script's own output while a stand-in cmake builds two steps.
    TempDir root;
    stand_in_root(root.path);
    fake_cmake(root / "bin", "lessons/CMakeFiles/01_single_head.dir/01_single_head.cpp.o", "lessons/01_single_head", 0);
    const Env env{{"PATH", (root / "bin").string() + ":/usr/bin:/bin"}, {"HOME", (root / "home").string()}};
    const std::string announced =
        "headwise: building the runner and the lessons; the exercises' graders build while "
        "the lessons run (the first build takes a few minutes";
    SECTION("on a terminal") {
        const Result r = run_on_a_terminal((root / "headwise").string() + " run all", env);
        CHECK(r.code == 0);
        CHECK_THAT(r.out, Contains(announced));
        CHECK_THAT(r.out, Contains("\r\033[K  [1/2] Building CXX object lessons/"));
        CHECK_THAT(r.out, Contains("\r\033[K  [2/2] Linking CXX executable lessons/01_single_head"));
        CHECK_THAT(r.out, Contains("the runner ran: run all"));
    }
    SECTION("piped: the announcement only; the steps go to build/.build.log") {
        TempDir io;
        Process p({"run", "all"}, env, io.path, std::nullopt, (root / "headwise").string());
        const Result r = p.wait();
        CHECK(r.code == 0);
        CHECK_THAT(r.out, Contains(announced));
        CHECK(r.out.find("[1/2]") == std::string::npos);
        CHECK_THAT(r.out, Contains("the runner ran: run all"));
        CHECK_THAT(read_text(root / "build" / ".build.log"),
                   Contains("[2/2] Linking CXX executable lessons/01_single_head"));
    }
}

TEST_CASE("./headwise --help and list answer from the built runner, installing and building nothing",
          "[runner][list][progress]") {
    TempDir root;
    stand_in_root(root.path);
    write_script(root / "scripts" / "install-deps", "#!/bin/sh\necho 'install-deps ran'\n");
    write_script(root / "bin" / "cmake", "#!/bin/sh\necho 'cmake ran'\nexit 1\n");
    const Env env{{"PATH", (root / "bin").string() + ":/usr/bin:/bin"}, {"HOME", (root / "home").string()}};
    for (const std::string command : {"--help", "-h", "list"}) {
        INFO(command);
        TempDir io;
        Process p({command}, env, io.path, std::nullopt, (root / "headwise").string());
        const Result r = p.wait();
        CHECK(r.code == 0);
        CHECK(r.out == "the runner ran: " + command + "\n");
        CHECK_THAT(r.out + r.err, !Contains("install-deps ran") && !Contains("cmake ran"));
    }
}

TEST_CASE("./headwise --help before the first build builds the runner alone, not the lessons", "[runner][progress]") {
    TempDir root;
    stand_in_root(root.path);
    fs::remove(root / "build" / "src" / "headwise");
    // The stand-in cmake logs its arguments and "builds" the runner.
    const fs::path runner = root / "build" / "src" / "headwise";
    write_script(root / "bin" / "cmake",
                 fmt::format("#!/bin/sh\necho \"$*\" >> '{}'\necho '[1/1] Linking CXX executable src/headwise'\n"
                             "printf '#!/bin/sh\\necho \"the runner ran: $*\"\\n' > '{}'\nchmod +x '{}'\n",
                             (root / "cmake-calls.log").string(), runner.string(), runner.string()));
    const Env env{{"PATH", (root / "bin").string() + ":/usr/bin:/bin"}, {"HOME", (root / "home").string()}};
    TempDir io;
    Process p({"--help"}, env, io.path, std::nullopt, (root / "headwise").string());
    const Result r = p.wait();
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("headwise: building the runner (the first build") && Contains("the runner ran: --help"));
    CHECK_THAT(read_text(root / "cmake-calls.log"), Contains("--build --preset default --target headwise_runner"));
}
