// tests/unused_test.cpp -- gradekit/unused.hpp: the values GCC says no line reads, and the sentence
// for those in a function whose checks fail.
#include "gradekit/unused.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>

#include <set>
#include <string>
#include <vector>

using headwise::gradekit::read_report;
using headwise::gradekit::Report;
using headwise::gradekit::unread_in_failing;
using headwise::gradekit::unread_value_step;
using headwise::gradekit::unread_values;
using headwise::gradekit::UnreadValue;
using headwise::gradekit::write_report;

namespace {

// A learner's split and merge written as a reshape: each makes the index it then does not use.
const std::string file = R"(#include "split_merge.hpp"
namespace headwise::ex02 {
xt::xtensor<float, 4> split_heads(const xt::xtensor<float, 3>& x, std::size_t heads) {
    const std::size_t d_head = x.shape(2) / heads;
    xt::xtensor<float, 4> out = xt::zeros<float>({x.shape(0), heads, x.shape(1), d_head});
    for (std::size_t f = 0; f < x.shape(2); ++f) {
        const std::size_t head = f / d_head;
        out.data()[f] = x.data()[f];
    }
    return out;
}
int count(int n) {
    int unused_total = n + 1;
    return n;
}
}  // namespace headwise::ex02
)";

}  // namespace

TEST_CASE("unused: GCC's unused and set-but-unused warnings are read in either kind of quotes") {
    const std::vector<std::string> warnings = {
        "exercises/02_split_merge/split_merge.cpp:7:27: warning: unused variable \xE2\x80\x98head\xE2\x80\x99 "
        "[-Wunused-variable]\n    7 |         const std::size_t head = f / d_head;\n",
        "exercises/02_split_merge/split_merge.cpp:13:9: warning: variable 'unused_total' set but not used "
        "[-Wunused-but-set-variable]",
        "exercises/02_split_merge/split_merge.cpp:8:9: warning: comparison of integer expressions of different "
        "signedness [-Wsign-compare]",
        "exercises/common/other.cpp:3:9: warning: unused variable 'elsewhere' [-Wunused-variable]",
    };
    const auto values = unread_values(warnings, "/home/learner/headwise/exercises/02_split_merge/split_merge.cpp");
    REQUIRE(values.size() == 2);
    CHECK(values[0].line == 7);
    CHECK(values[0].name == "head");
    CHECK(values[1].line == 13);
    CHECK(values[1].name == "unused_total");
}

TEST_CASE("unused: a value unread in a function whose checks fail is said with its line and function") {
    const std::string said = unread_in_failing(file, {{7, "head"}, {13, "unused_total"}},
                                               {"split_heads: hand-worked (1, 2, 4) into 2 heads of width 2"});
    CHECK(said.find("your line 7 (`const std::size_t head = f / d_head;`, in split_heads") != std::string::npos);
    CHECK(said.find("makes `head`, and no line reads it") != std::string::npos);
    CHECK(said.find("split_heads fails its checks") != std::string::npos);
    CHECK(said.find("unused_total") == std::string::npos);  // count's checks pass
}

TEST_CASE("unused: a check named by one word of the function's name is about it") {
    const std::string kernel = "void attention_tiled(int n) {\n    const int my_keys = n - 1;\n    use(n + 1);\n}\n";
    CHECK(unread_in_failing(kernel, {{2, "my_keys"}}, {"tiled: causal, query i sees keys 0..i"})
              .find("in attention_tiled") != std::string::npos);
    CHECK(unread_in_failing(kernel, {{2, "my_keys"}}, {"tile: another function"}).empty());
}

TEST_CASE("unused: nothing is said when no failing check is about the function that holds the value") {
    CHECK(unread_in_failing(file, {{13, "unused_total"}}, {"split_heads: every head gets its own slice"}).empty());
    CHECK(unread_in_failing(file, {}, {"split_heads: every head gets its own slice"}).empty());
    CHECK(unread_in_failing(file, {{7, "head"}}, {"a check named without its function"}).empty());
}

TEST_CASE("unused: beside a repair of part, only a value in a function of the checks still failing is asked about") {
    const headwise::test::TempDir dir;
    const auto source = dir.path / "training.cpp";
    std::ofstream(source) << "float loss(int n) {\n    return n * 2.0f;\n}\n"
                             "void step(float& p, float lr) {\n    const float decay = 1.0f - lr;\n    p -= lr;\n}\n";
    Report r;
    r.compiled = r.finished = true;
    r.total = 4;
    r.failures = {{"loss: one", "differs", "", "", "", "", "", {}}, {"step: two", "differs", "", "", "", "", "", {}}};
    r.warnings = {"exercises/11/training.cpp:5:17: warning: unused variable 'decay' [-Wunused-variable]"};
    r.repaired = "found by repairing your code: ...";
    r.repaired_partly = true;
    r.still_failing = {"step: two"};
    const headwise::gradekit::Subject s{"ex11", dir.path, {source}, dir.path / "ex11.json"};
    REQUIRE(write_report(s.report, r));
    const std::string said = unread_value_step(s);
    CHECK(said.starts_with("Of the checks still failing: your line 5 (`const float decay = 1.0f - lr;`, in step)"));
    CHECK(read_report(s.report)->located == said);
    // The repair of part mended the function that holds it: nothing to ask.
    r.still_failing = {"loss: one"};
    REQUIRE(write_report(s.report, r));
    CHECK(unread_value_step(s).empty());
}
