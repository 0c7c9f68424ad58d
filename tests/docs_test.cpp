// The docs are tested like code: links resolve, the commands they show run, the shape tables
// match what the lessons print, and the figures are valid PNGs that `headwise figures`
// reproduces at the same size.
//
// Paths come from CMake: HEADWISE_TEST_SOURCE_DIR (the repository), HEADWISE_RUNNER_EXE (the
// built runner, standing in for ./headwise so no test builds into build/), HEADWISE_LESSONS_DIR.
#include "headwise/io/figure.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>
#include <stdlib.h>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {

const fs::path source_dir = HEADWISE_TEST_SOURCE_DIR;

std::string read(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

struct CourseLesson {
    std::string name, title, doc;
    bool draws = false;              // course.json "figures": it draws some
    bool draws_at_defaults = false;  // "figures": [] -- its own test draws them (lessons/CMakeLists.txt)
};
// The lessons of course.json, in course order.
std::vector<CourseLesson> course_lessons() {
    std::ifstream in(source_dir / "course.json");
    const auto course = nlohmann::json::parse(in);
    std::vector<CourseLesson> out;
    for (const auto& l : course.at("lessons"))
        out.push_back({l.at("name").get<std::string>(), l.at("title").get<std::string>(),
                       l.at("doc").get<std::string>(), l.contains("figures"),
                       l.contains("figures") && l.at("figures").empty()});
    return out;
}

// README.md and every Markdown file under docs/.
std::vector<fs::path> markdown_files() {
    std::vector<fs::path> out{source_dir / "README.md"};
    for (const auto& e : fs::recursive_directory_iterator(source_dir / "docs"))
        if (e.path().extension() == ".md") out.push_back(e.path());
    return out;
}

// Runs a shell command, returns (exit code, stdout).
std::pair<int, std::string> run(const std::string& command) {
    std::string out;
    FILE* p = popen(command.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    const int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, out};
}

// What lesson `name` printed at its defaults: the output its own test kept (lessons/output/, written
// when it exited 0; ctest runs the lessons' tests first, FIXTURES_REQUIRED) when that is newer than
// the lesson, else a run of its own -- drawing into `figures` when that is given.
std::pair<int, std::string> lesson_at_defaults(const std::string& name, const fs::path& figures = {}) {
    const fs::path lessons = HEADWISE_LESSONS_DIR;
    const fs::path kept = lessons / "output" / (name + ".txt");
    std::error_code ec;
    if (fs::exists(kept) && fs::last_write_time(kept, ec) >= fs::last_write_time(lessons / name, ec) && !ec)
        return {0, read(kept)};
    const std::string draw = figures.empty() ? "" : " --save-figures " + figures.string();
    return run(fmt::format("{}{} 2>&1", (lessons / name).string(), draw));
}

// Lines of fenced code blocks that start with "./headwise ", continuation lines joined and
// trailing comments dropped.
std::vector<std::string> headwise_commands(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line, pending;
    bool fenced = false;
    while (std::getline(in, line)) {
        if (line.rfind("```", 0) == 0) {
            fenced = !fenced;
            continue;
        }
        if (!fenced) continue;
        if (!pending.empty()) {
            pending += " " + line;
        } else if (line.rfind("./headwise ", 0) == 0) {
            pending = line;
        } else {
            continue;
        }
        if (!pending.empty() && pending.back() == '\\') {
            pending.pop_back();
            continue;
        }
        if (const auto hash = pending.find("  #"); hash != std::string::npos) pending.resize(hash);
        while (!pending.empty() && pending.back() == ' ') pending.pop_back();
        out.push_back(pending);
        pending.clear();
    }
    return out;
}

}  // namespace

TEST_CASE("every relative link in README and docs/ resolves to a file", "[docs]") {
    const std::regex link(R"(\]\(([^)\s]+)\))");
    std::size_t checked = 0;
    for (const auto& file : markdown_files()) {
        const std::string text = read(file);
        for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
            std::string target = (*it)[1];
            if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 ||
                target.rfind("mailto:", 0) == 0 || target[0] == '#')
                continue;
            target = target.substr(0, target.find('#'));
            INFO(fs::relative(file, source_dir).string() << " links to " << target);
            CHECK(fs::exists(file.parent_path() / target));
            ++checked;
        }
    }
    CHECK(checked >= 30);  // the docs do link to each other, the lessons and the figures
}

TEST_CASE("every ./headwise command the docs show exists, and the quick ones exit 0", "[docs]") {
    // Commands that exist but are not run here, and why. Each is still checked to exist (--help).
    const std::map<std::string, std::string> not_run{
        {"test", "it is this test suite"},
        {"bench", "it measures for minutes"},
        {"watch", "it waits for edits until Ctrl-C"},
        {"grade", "it builds the graders into build/ (the grade tests cover it)"},
        {"reset", "it rewrites exercises/ (runner_test covers it on a copy)"},
        {"figures", "it writes docs/figures/ (run below with --out)"},
        {"attend", "it needs the reader's own .npy files (attend_test covers it)"},
        {"heads", "it needs the cached lesson 07 model and writes .npy files (heads_test covers it)"},
        {"train", "it trains for up to a minute (train_model_test and lesson 11 cover it)"},
        {"generate", "it needs the cached lesson 12 model and writes files (generate_test covers it)"},
        {"hint", "it advances the learner's hint counter"},
        {"solution", "it prints the answer only after the exercise passes"},
    };
    std::set<std::string> seen;
    for (const auto& file : markdown_files()) {
        for (const std::string& command : headwise_commands(read(file))) {
            if (!seen.insert(command).second) continue;
            std::istringstream words(command.substr(std::string("./headwise ").size()));
            std::string sub;
            words >> sub;
            INFO(fs::relative(file, source_dir).string() << ": " << command);
            // `run all` and `run N` at the defaults are the lessons' own tests ("lesson NN runs and
            // prints..."): here they are checked to exist, and a lesson number to name a lesson.
            if (not_run.count(sub) != 0 || sub == "--help" || command == "./headwise run all") {
                CHECK(run(fmt::format("{} {} --help >/dev/null 2>&1", HEADWISE_RUNNER_EXE, sub)).first == 0);
                continue;
            }
            if (std::regex_match(command, std::regex(R"(\./headwise run [0-9]+)"))) {
                CHECK(run(fmt::format("{} {} -- --help >/dev/null 2>&1", HEADWISE_RUNNER_EXE,
                                      command.substr(std::string("./headwise ").size())))
                          .first == 0);
                continue;
            }
            const auto [rc, out] = run(fmt::format("cd {} && {}{} 2>&1", source_dir.string(), HEADWISE_RUNNER_EXE,
                                                   command.substr(std::string("./headwise").size())));
            INFO(out.substr(out.size() > 2000 ? out.size() - 2000 : 0));
            CHECK(rc == 0);
        }
    }
    CHECK(seen.count("./headwise run all") == 1);
    CHECK(seen.count("./headwise test") == 1);
    CHECK(seen.size() >= 10);
}

TEST_CASE("the shape tables in docs/NN_*.md match the shapes the lessons print", "[docs]") {
    // A table row:  | `q = x . w_q^T` | B, N, d | (2, 5, 64) |   -- name as printed, dims, shape.
    const std::regex row(R"(^\| `([^`]+)` +\| ([^|]+?) +\| (\([0-9, ]*\)) +\|$)");
    // A shape line:  "  q = x . w_q^T          (2, 5, 64)         [B, N, d]"
    const std::regex printed(R"(^  (.+?) +(\([0-9, ]*\)) +\[(.*)\]$)");
    const std::regex flags_comment(R"(<!-- shape-table-flags:([^>]*)-->)");
    std::size_t docs_with_tables = 0;
    for (const CourseLesson& lesson : course_lessons()) {
        const std::string& name = lesson.name;
        const std::string text = read(source_dir / lesson.doc);
        std::smatch flags;
        const std::string extra = std::regex_search(text, flags, flags_comment) ? flags[1].str() : "";
        const auto [rc, out] = extra.empty() ? lesson_at_defaults(name)
                                             : run(fmt::format("{}/{} {} 2>&1", HEADWISE_LESSONS_DIR, name, extra));
        INFO(name << extra);
        if (rc == 2 && (out.find("the all-MiniLM-L6-v2 model is not in") != std::string::npos ||
                        out.find("the decoder's model is not in") != std::string::npos)) {
            WARN(name << ": not checked, its model is not cached (scripts/fetch-model)");
            ++docs_with_tables;  // counted, not checked: the lesson's own test reports it skipped
            continue;
        }
        REQUIRE(rc == 0);
        std::set<std::tuple<std::string, std::string, std::string>> lines;
        std::istringstream o(out);
        std::string line;
        std::smatch m;
        while (std::getline(o, line))
            if (std::regex_match(line, m, printed)) lines.insert({m[1], m[2], m[3]});
        std::size_t rows = 0;
        std::istringstream t(text);
        while (std::getline(t, line)) {
            if (!std::regex_match(line, m, row)) continue;
            INFO("table row: " << line);
            CHECK(lines.count({m[1], m[3], m[2]}) == 1);
            ++rows;
        }
        CHECK(rows >= 5);
        ++docs_with_tables;
    }
    CHECK(docs_with_tables == course_lessons().size());
}

// All the text a grade can print from: the graders, their shared code, the grade tool, the emulator.
std::string grader_texts() {
    std::string all;
    for (const fs::path& dir : {source_dir / "tests/grade", source_dir / "src/gradekit", source_dir / "src/emulator"})
        for (const auto& e : fs::recursive_directory_iterator(dir))
            if (e.path().extension() == ".cpp" || e.path().extension() == ".hpp") all += read(e.path());
    std::ranges::transform(all, all.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return all;
}

TEST_CASE("every hint keyed to a failing check names words its grader can print", "[docs][hint]") {
    std::ifstream in(source_dir / "course.json");
    const auto course = nlohmann::json::parse(in);
    const std::string graders = grader_texts();
    const std::regex keyed(R"(<!-- when failing: (.*) -->)");
    for (const auto& l : course.at("lessons")) {
        if (!l.contains("exercise")) continue;
        const std::string dir = l.at("exercise").at("dir").get<std::string>();
        const std::string hints = read(source_dir / "exercises" / dir / "HINTS.md");
        std::size_t phrases = 0;
        for (auto m = std::sregex_iterator(hints.begin(), hints.end(), keyed); m != std::sregex_iterator(); ++m) {
            std::istringstream list((*m)[1].str());
            for (std::string phrase; std::getline(list, phrase, ';');) {
                phrase = phrase.substr(phrase.find_first_not_of(' '));
                std::ranges::transform(phrase, phrase.begin(),
                                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
                INFO("exercises/" << dir << "/HINTS.md: \"" << phrase << "\"");
                CHECK(graders.find(phrase) != std::string::npos);
                ++phrases;
            }
        }
        INFO("exercises/" << dir << "/HINTS.md");
        CHECK(phrases > 0);
    }
}

TEST_CASE("README's lesson table and headwise list show every lesson of course.json, in order, titles whole",
          "[docs][course]") {
    // README rows:  | 01 | `lessons/01_single_head.cpp` | what it shows |
    const std::regex row(R"(^\| ([0-9]{2}) \| `lessons/([0-9]{2}_[a-z0-9_]+)\.cpp` \|)");
    std::vector<std::string> readme;
    std::istringstream t(read(source_dir / "README.md"));
    std::smatch m;
    for (std::string line; std::getline(t, line);)
        if (std::regex_search(line, m, row)) {
            CHECK(m[1].str() == m[2].str().substr(0, 2));
            readme.push_back(m[2]);
        }
    std::vector<std::string> course;
    for (const CourseLesson& l : course_lessons()) course.push_back(l.name);
    CHECK(readme == course);

    const auto [rc, listing] = run(fmt::format("{} list 2>&1", HEADWISE_RUNNER_EXE));
    INFO(listing);
    REQUIRE(rc == 0);
    std::size_t at = 0;
    for (const CourseLesson& l : course_lessons()) {
        INFO(l.name << ": " << l.title);
        const std::size_t found = listing.find(l.title, at);
        CHECK(found != std::string::npos);  // whole, and after the lesson before it
        if (found != std::string::npos) at = found + l.title.size();
        CHECK(fs::exists(source_dir / l.doc));
    }
}

TEST_CASE("headwise figures regenerates the committed figures as PNGs of the same size", "[docs][figure]") {
    // A folder of its own (mkdtemp): two builds testing at once must not share one.
    std::string templ = (fs::temp_directory_path() / "headwise_docs_test_figures-XXXXXX").string();
    REQUIRE(mkdtemp(templ.data()) != nullptr);
    const fs::path out = templ;
    // The lessons that draw at their defaults drew in their own tests (lesson_at_defaults): the
    // command runs the others. Without the cached model, lessons 07 and 12 draw nothing.
    std::string only, log;
    for (const CourseLesson& lesson : course_lessons()) {
        if (lesson.draws && !lesson.draws_at_defaults) only += " --lesson " + lesson.name.substr(0, 2);
        if (!lesson.draws_at_defaults) continue;
        const auto [rc, printed] = lesson_at_defaults(lesson.name, out);
        log += printed;
        INFO(printed.substr(printed.size() > 2000 ? printed.size() - 2000 : 0));
        CHECK((rc == 0 || (rc == 2 && printed.find("model is not in") != std::string::npos)));
    }
    const auto [rc, drawn] = run(fmt::format("{} figures --out {}{} 2>&1", HEADWISE_RUNNER_EXE, out.string(), only));
    log += drawn;
    INFO(log);
    REQUIRE(rc == 0);
    // Each lesson states the size it wrote: "  figure: DIR/NAME.png (W x H), and .svg".
    const std::regex stated(R"(figure: (\S+\.png) \((\d+) x (\d+)\))");
    std::size_t figures = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), stated); it != std::sregex_iterator();
         ++it, ++figures) {
        const fs::path file = (*it)[1].str();
        INFO(file.string());
        const auto fresh = headwise::figure::png_size(file);
        REQUIRE(fresh.has_value());
        CHECK(fresh->width == std::stoul((*it)[2]));
        CHECK(fresh->height == std::stoul((*it)[3]));
        const auto committed = headwise::figure::png_size(source_dir / "docs" / "figures" / file.filename());
        REQUIRE(committed.has_value());
        CHECK(committed->width == fresh->width);
        CHECK(committed->height == fresh->height);
        // Beside each PNG, the same figure as SVG (text kept as text; tests/figure_test.cpp reads it).
        CHECK(fs::exists(fs::path(file).replace_extension(".svg")));
        CHECK(fs::exists(source_dir / "docs" / "figures" / fs::path(file.filename()).replace_extension(".svg")));
    }
    CHECK(figures >= 7);
    fs::remove_all(out);
}
