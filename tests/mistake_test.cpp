// tests/mistake_test.cpp -- gradekit/mistake.hpp: the one .mistake parser reads every .mistake of
// the course, and refuses what is not the format.
#include "gradekit/mistake.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using headwise::gradekit::apply_mistake;
using headwise::gradekit::ecmascript_from_cmake;
using headwise::gradekit::parse_mistake;
using headwise::gradekit::read_mistake;

namespace {

const fs::path source_dir = HEADWISE_TEST_SOURCE_DIR;

std::vector<fs::path> every_mistake_file() {
    std::vector<fs::path> files;
    for (const fs::path& dir : {source_dir / "tests/grade", source_dir / "tests/course"})
        for (const auto& e : fs::recursive_directory_iterator(dir))
            if (e.path().extension() == ".mistake") files.push_back(e.path());
    return files;
}

}  // namespace

TEST_CASE("mistake: every .mistake of the course parses, in its exercise's grading folder") {
    const auto files = every_mistake_file();
    REQUIRE(files.size() > 200);
    const std::regex layout(R"(.*/tests/grade/ex[0-9][0-9]/(mistakes|learner|search|located)/[a-z0-9_]+\.mistake)");
    for (const auto& f : files) {
        INFO(f.string());
        const auto m = read_mistake(f);  // throws, naming the file and line, on anything else
        CHECK(!m.edits.empty());
        const std::string kind = f.parent_path().filename().string();
        CHECK(m.catalogued() == (kind == "mistakes"));  // only the catalogue names its mistakes
        if (kind == "learner" || kind == "search") CHECK(!m.expectations.empty());
        if (kind == "located")
            CHECK(!(m.expected("expect-located").empty() && m.expected("expect-fresh").empty() &&
                    m.expected("expect-repaired").empty()));
        if (f.string().find("/tests/course/") == std::string::npos) CHECK(std::regex_match(f.string(), layout));
    }
}

TEST_CASE("mistake: a catalogued mistake's name, explanation, edits and expectations") {
    const auto m = parse_mistake(
        "# a comment\nmistake: no scaling\nwhy: The scores grow.\nfix: Divide them.\nreplace: a * s\nwith: a\n"
        "replace#2: f(x)\nwith: f(y)\nexpect-not: behaves exactly like\n",
        "t.mistake");
    CHECK(m.name == "no scaling");
    CHECK(m.why == "The scores grow.");
    CHECK(m.fix == "Divide them.");
    REQUIRE(m.edits.size() == 2);
    CHECK(m.edits[1].occurrence == 2);
    CHECK(m.edits[1].line == 7);
    CHECK(m.expected("expect-not") == std::vector<std::string>{"behaves exactly like"});
    CHECK(apply_mistake(m, "x = a * s;\nf(x);\nf(x);\n", "s.cpp") == "x = a;\nf(x);\nf(y);\n");
}

TEST_CASE("mistake: what is not the format is refused with its file and line") {
    auto refused = [](const std::string& text) {
        try {
            parse_mistake(text, "t.mistake");
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    CHECK_THAT(refused("replace: a\nwith: b\nexpect_not: c\n"),
               Catch::Contains("t.mistake:3: unknown key 'expect_not'"));
    CHECK_THAT(refused("with: b\n"), Catch::Contains("t.mistake:1: 'with:' without a 'replace:'"));
    CHECK_THAT(refused("replace: a\n"), Catch::Contains("has no 'with:'"));
    CHECK_THAT(refused("expect: a\n"), Catch::Contains("no 'replace:' / 'with:' pair"));
    CHECK_THAT(refused("mistake: m\nreplace: a\nwith: b\n"), Catch::Contains("states each of"));
    CHECK_THAT(refused("replace: a\nwith: b\nreplace: a\nwith: c\nreplace:a\nwith: d\n"),
               Catch::Contains("t.mistake:5: 'replace:' is followed by one space"));
}

TEST_CASE("mistake: a text to replace that is not in the solution once fails, naming the line") {
    const auto m = parse_mistake("replace: a\nwith: b\n", "t.mistake");
    CHECK_THROWS_WITH(apply_mistake(m, "a a", "s.cpp"),
                      Catch::Contains("t.mistake:1: the text to replace must occur exactly once in s.cpp"));
    CHECK_THROWS_WITH(apply_mistake(m, "c", "s.cpp"), Catch::Contains("exactly once"));
}

TEST_CASE("mistake: expectations are CMake regexes, whose '.' matches a newline too and whose braces are braces") {
    const std::regex dot(ecmascript_from_cmake("a.b"));
    CHECK(std::regex_search("a\nb", dot));
    CHECK(!std::regex_search("a\nb", std::regex(ecmascript_from_cmake("a[.]b"))));
    CHECK(std::regex_search("x (1)", std::regex(ecmascript_from_cmake("x \\(1\\)"))));
    CHECK(std::regex_search("targets {1, -1}", std::regex(ecmascript_from_cmake("targets {1, -1}"))));
    CHECK(std::regex_search("N in {1}", std::regex(ecmascript_from_cmake("N in \\{1\\}"))));
}
