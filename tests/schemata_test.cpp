// tests/schemata_test.cpp -- gradekit/schemata.hpp's compile begun before the grader is built: taken
// by the repair step when it has finished, stopped with every process it started when the grade
// ends without it. The "grader" is a two-rule Ninja file whose compile is a shell command, so the
// test needs no compiler and takes no more than a second.
#include "gradekit/schemata.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using headwise::gradekit::RepairSetup;
using headwise::gradekit::SchemataInAdvance;
using headwise::gradekit::Subject;

namespace {

std::string ninja_escaped(const std::string& command) {
    std::string out;
    for (const char c : command) out += c == '$' ? std::string("$$") : std::string(1, c);
    return out;
}

// A learner's file with a few edits (a comparison, a loop's bound), and a build directory whose
// grader compiles it with `compile` (a shell command, its $2 the object: " -o <object> ... -c
// <source>" follow it, as a compiler's arguments) and links with a touch.
struct FakeGrader {
    fs::path root;
    Subject subject;
    RepairSetup setup;

    explicit FakeGrader(const std::string& compile) {
        std::string templ = (fs::temp_directory_path() / "headwise_schemata_test-XXXXXX").string();
        REQUIRE(mkdtemp(templ.data()) != nullptr);
        root = templ;
        const fs::path source = root / "learner.cpp";
        std::ofstream(source) << "int count_below(const int* x, int n, int limit) {\n"
                                 "    int count = 0;\n"
                                 "    for (int i = 0; i < n; ++i) count += x[i] < limit;\n"
                                 "    return count;\n"
                                 "}\n";
        fs::create_directories(root / "build");
        std::ofstream(root / "build" / "build.ninja")
            << "rule cc\n  command = sh -c '" << ninja_escaped(compile) << "' cc -o $out -c $in\n"
            << "rule link\n  command = touch $out -o $out $in\n"
            << "build learner.o: cc " << source.string() << "\n"
            << "build grader: link learner.o\n";
        subject = {"ex99", root, {source}, root / "build" / "ex99.json"};
        setup.build_dir = root / "build";
        setup.target = "grader";
    }
    ~FakeGrader() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
};

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

}  // namespace

TEST_CASE("schemata: a compile begun before the build is taken, every edit kept, once it has finished") {
    const FakeGrader g("touch \"$2\"");
    SchemataInAdvance begun(g.subject, g.setup);
    const std::string text =
        "int count_below(const int* x, int n, int limit) {\n"
        "    int count = 0;\n"
        "    for (int i = 0; i < n; ++i) count += x[i] < limit;\n"
        "    return count;\n"
        "}\n";
    REQUIRE(begun.made_for(text));
    CHECK_FALSE(begun.made_for(text + "// changed since\n"));
    REQUIRE_FALSE(begun.mutants().variants.empty());
    const auto built = begun.take();
    REQUIRE(built);
    CHECK(built->kept.size() == begun.mutants().variants.size());
    CHECK(fs::exists(built->file.string() + ".o"));
    CHECK(fs::exists(built->file));  // the schemata's source, where the repair step reads errors' lines
}

TEST_CASE("schemata: a grade that ends without the compile stops it, and every process it started") {
    // The compile writes its shell's pid, then waits far longer than the test may.
    const FakeGrader g("echo $$ > \"$2.pid\"; exec sleep 60");
    const auto started = std::chrono::steady_clock::now();
    pid_t compiler = 0;
    {
        SchemataInAdvance begun(g.subject, g.setup);
        const fs::path pid_file = headwise::gradekit::repair_dir(g.setup) / "learner.cpp.o.pid";
        for (int i = 0; i < 200 && compiler == 0; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            std::ifstream(pid_file) >> compiler;
        }
        REQUIRE(compiler > 0);
        CHECK(alive(compiler));
    }  // the grade passed: nothing takes the compile
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
        gone = !alive(compiler);
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(gone);
}
