// tests/sanitizer_test.cpp -- gradekit/sanitizer.hpp on real sanitizer logs: the facts read from
// each and the sentence the grade report says. The logs are tests/fixtures/sanitizer/*.log, made
// by capture.sh there from crashes.cpp compiled as a grade build compiles a learner's file; the
// line numbers below are crashes.cpp's.
#include "gradekit/sanitizer.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace headwise::gradekit;

namespace {

const fs::path source_dir = HEADWISE_TEST_SOURCE_DIR;
const std::string crashes = "tests/fixtures/sanitizer/crashes.cpp";
const std::string bounds_doc = "docs/xtensor-for-pytorch-users.md, \"Indices, shapes and loop bounds\"";
const std::string views_doc = "docs/xtensor-for-pytorch-users.md, \"Views, references and lazy expressions\"";

// The subject is crashes.cpp, as a grade's subject is the learner's file.
Subject fixture_subject() { return {"fixture", source_dir, {source_dir / crashes}, {}}; }

// A captured log with this checkout's path where capture.sh wrote @ROOT@.
std::string log_text(const std::string& name) {
    std::ifstream in(source_dir / "tests/fixtures/sanitizer" / (name + ".log"));
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    std::string log = text.str();
    for (std::size_t at; (at = log.find("@ROOT@")) != std::string::npos;) log.replace(at, 6, source_dir.string());
    return log;
}

std::vector<std::string> log_lines(const std::string& name) {
    std::vector<std::string> lines;
    std::istringstream in(log_text(name));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

CrashFacts facts_of(const std::string& name) { return read_crash(log_lines(name), fixture_subject()); }

std::string sentence_of(const CrashFacts& c) { return crash_sentence(c, 1, false).what; }

// A SEGV's facts as one line: "SEGV: READ at 0x0, zero page, line 33".
std::string segv_of(const CrashFacts& c) {
    return fmt::format("{}: {} at {}{}{}, line {}", c.kind, c.access == Access::write ? "WRITE" : "READ",
                       c.address ? fmt::format("{:#x}", *c.address) : std::string("no address"),
                       c.zero_page ? ", zero page" : "", c.high_address ? ", high address" : "", c.where_line);
}

// The sentence and, after " | reread: ", the lesson.
std::string said_of(const CrashFacts& c) {
    const CrashSentence said = crash_sentence(c, 1, false);
    return said.what + " | reread: " + said.lesson;
}

// The error and its access as one line: "heap-buffer-overflow: WRITE 2560 bytes, 0 bytes right of
// 1600 at line 27".
std::string access_of(const CrashFacts& c) {
    const char* side = c.side == Side::right    ? "right of"
                       : c.side == Side::left   ? "left of"
                       : c.side == Side::inside ? "inside"
                                                : "none";
    return fmt::format("{}: {} {} bytes, {} bytes {} {} at line {}", c.kind,
                       c.access == Access::write ? "WRITE" : "READ", c.size, c.offset, side, c.region, c.where_line);
}

// The access and the function at the top of the stack: "... at line 27 in __interceptor_memcpy".
std::string copy_of(const CrashFacts& c) { return access_of(c) + " in " + c.top_function; }

struct Expected {
    std::string log, facts, said;
};

// Each log's facts as `summary` writes them, and its sentence with `lesson` to reread.
void check_logs(const std::vector<Expected>& cases, std::string (*summary)(const CrashFacts&),
                const std::string& lesson) {
    for (const Expected& expected : cases) {
        INFO(expected.log);
        const CrashFacts c = facts_of(expected.log);
        CHECK(summary(c) == expected.facts);
        CHECK(said_of(c) == expected.said + " | reread: " + lesson);
    }
}

}  // namespace

TEST_CASE("sanitizer: a read one element past a heap buffer is one element past the last") {
    const CrashFacts c = facts_of("heap_overflow_by_one");
    CHECK(access_of(c) == "heap-buffer-overflow: READ 4 bytes, 0 bytes right of 1600 at line 21");
    CHECK(c.where_file == crashes);
    CHECK(c.where_source == "for (std::size_t j = 0; j <= n; ++j) m = std::max(m, p[j]);");
    CHECK(said_of(c) ==
          "read 4 bytes just past the end of a 1600-byte buffer (400 floats): one element past the last "
          "| reread: " +
              bounds_doc);
}

TEST_CASE("sanitizer: a copy or fill larger than its buffer says its size and the overflow in bytes and floats") {
    check_logs(
        {
            {"overflowing_memcpy",
             "heap-buffer-overflow: WRITE 2560 bytes, 0 bytes right of 1600 at line 27 in __interceptor_memcpy",
             "a copy of 2560 bytes (640 floats) into a 1600-byte buffer (400 floats): at least 960 bytes (240 floats) "
             "more "
             "than it holds"},
            // std::copy reading past its source: a memmove, located at the learner's std::copy line.
            {"overflowing_copy_from",
             "heap-buffer-overflow: READ 2560 bytes, 0 bytes right of 1600 at line 89 in __interceptor_memmove",
             "a copy of 2560 bytes (640 floats) out of a 1600-byte buffer (400 floats): at least 960 bytes (240 "
             "floats) "
             "more than it holds"},
            {"overflowing_memset",
             "heap-buffer-overflow: WRITE 1604 bytes, 0 bytes right of 1600 at line 95 in __interceptor_memset",
             "a fill of 1604 bytes (401 floats) into a 1600-byte buffer (400 floats): at least 4 bytes (1 float) more "
             "than "
             "it holds"},
        },
        copy_of, bounds_doc);
}

TEST_CASE("sanitizer: one float through memcpy just past the end is still one element past the last") {
    CrashFacts c = facts_of("overflowing_memcpy");
    c.size = 4;  // a copy of one float, starting at the end
    CHECK(sentence_of(c) ==
          "wrote 4 bytes just past the end of a 1600-byte buffer (400 floats): one element past the last");
}

TEST_CASE("sanitizer: a buffer's size is read aloud: an 8-byte buffer of 2 floats, a 4-byte one of 1 float") {
    CrashFacts c = facts_of("heap_overflow_by_one");
    c.region = 8;
    CHECK(sentence_of(c) == "read 4 bytes just past the end of an 8-byte buffer (2 floats): one element past the last");
    c.region = 4;
    c.offset = 12;
    CHECK(sentence_of(c) == "read 4 bytes 12 bytes past the end of a 4-byte buffer (1 float)");
    c.side = Side::left;
    c.region = 80;
    CHECK(sentence_of(c) == "read 4 bytes 12 bytes before the start of an 80-byte buffer (20 floats)");
}

TEST_CASE("sanitizer: a copy that fits its buffer but started too late says where it must have begun") {
    CrashFacts c = facts_of("overflowing_memcpy");
    c.size = 1000;
    CHECK(sentence_of(c) ==
          "a copy of 1000 bytes (250 floats) into a 1600-byte buffer (400 floats) that ran past its end: it began "
          "fewer than 1000 bytes before the end, after its first 600 bytes");
}

TEST_CASE("sanitizer: *std::max_element of an empty vector reads through the end of an empty range") {
    const CrashFacts c = facts_of("max_of_empty");
    CHECK(segv_of(c) == "SEGV: READ at 0x0, zero page, line 33");
    CHECK(c.where_source == "const float top = *std::max_element(w.begin(), w.end());");
    CHECK(said_of(c) ==
          "read through the end of an empty range (`*std::max_element(w.begin(), w.end())`): max_element of an empty "
          "range returns end(), and an empty std::vector holds no memory (its data() is null) -- the range had no "
          "elements: `w` is made with `len` elements on your line 32 (`std::vector<float> w(len);`), so `len` was 0 "
          "there | reread: " +
              bounds_doc);
    CHECK(said_of(c).find("never set") == std::string::npos);
}

TEST_CASE("sanitizer: front(), back() and [0] of an empty vector read an element of an empty range") {
    check_logs(
        {
            {"front_of_empty", "SEGV: READ at 0x0, zero page, line 39",
             "read the first element of an empty range (`w.front()`): front() is *begin(), and an empty std::vector "
             "holds "
             "no memory (its data() is null) -- the range had no elements: `w` is made with `len` elements on your "
             "line 38 (`std::vector<float> w(len);`), so `len` was 0 there"},
            // *(end() - 1) of a null data(): ASan prints no address, only "a dereference of a high value address".
            {"back_of_empty", "SEGV: READ at no address, high address, line 44",
             "read the last element of an empty range (`w.back()`): back() is *(end() - 1), one element before the "
             "null "
             "data() of an empty std::vector (it holds no memory) -- the range had no elements: `w` is made with "
             "`len` elements on your line 43 (`std::vector<float> w(len);`), so `len` was 0 there"},
            {"first_of_empty", "SEGV: READ at 0x0, zero page, line 49",
             "read element 0 of an empty range (`w[0]`): an empty std::vector holds no memory (its data() is null) -- "
             "the "
             "range had no elements: `w` is made with `len` elements on your line 48 (`std::vector<float> w(len);`), "
             "so `len` was 0 there"},
        },
        segv_of, bounds_doc);
}

TEST_CASE("sanitizer: an empty vector's size is traced to the learner's line that set it, or to a push_back not run") {
    using headwise::gradekit::empty_range_origin;
    const std::vector<std::string> decoder = {
        "Tensor4 decode_step(Cache& cache, const Tensor3& tokens, const Project& project) {",
        "    const std::size_t n = cache.length;",
        "    std::vector<float> p(n);",
        "    for (std::size_t j = 0; j < n; ++j) p[j] = score(j);",
    };
    CHECK(empty_range_origin(decoder, "p") ==
          "`p` is made with `n` elements on your line 3 (`std::vector<float> p(n);`), so `n` was 0 there -- your line "
          "2 (`const std::size_t n = cache.length;`) sets it");
    const std::vector<std::string> grown = {
        "    std::vector<float> logits;",
        "    for (std::size_t j = 0; j < span; ++j)",
        "        logits.push_back(dot(i, j));",
    };
    CHECK(
        empty_range_origin(grown, "logits") ==
        "`logits` is filled only by your line 3 (`logits.push_back(dot(i, j));`), which had not run before this line");
    // Resized, cleared or assigned after it is made: where its size came from is not one line.
    CHECK(empty_range_origin({"    std::vector<float> p(n);", "    p.resize(m);"}, "p").empty());
    CHECK(empty_range_origin({"    std::vector<float> p(n);", "    p = other;"}, "p").empty());
    // A size that is an expression, a member's range, or no declaration seen: nothing said.
    CHECK(empty_range_origin({"    std::vector<float> p(n - start);"}, "p").empty());
    CHECK(empty_range_origin({"    std::vector<float> p(n);"}, "cache.p").empty());
    CHECK(empty_range_origin({"    float x = 0;"}, "p").empty());
}

TEST_CASE("sanitizer: a null pointer that is no range is still a pointer never set") {
    const std::string null_read =
        "crashed with a segmentation fault (SIGSEGV) on a read through a null pointer or reference (an address just "
        "above 0): a pointer never set, or a reference or pointer to a local variable returned from its function (GCC "
        "returns null for it)";
    const CrashFacts deref = facts_of("read_through_null");
    CHECK(segv_of(deref) == "SEGV: READ at 0x0, zero page, line 53");
    CHECK(!empty_range_read(deref));
    CHECK(said_of(deref) == null_read + " | reread: " + views_doc);
    // weights[0] on a raw pointer parameter: [0] alone does not make a vector.
    const CrashFacts indexed = facts_of("first_through_null");
    CHECK(indexed.where_source == "return weights[0] * 2.0f;");
    CHECK(!empty_range_read(indexed));
    CHECK(sentence_of(indexed) == null_read);
}

TEST_CASE("sanitizer: an empty range is named only where the address is a null data()'s") {
    CrashFacts far = facts_of("max_of_empty");
    far.zero_page = false;  // a SEGV far from 0: not an empty vector's end()
    far.address = 0x602000001000;
    CHECK(!empty_range_read(far));
    CHECK(sentence_of(far).find("empty range") == std::string::npos);
    CrashFacts front_high = facts_of("front_of_empty");
    front_high.zero_page = false;  // front() is *begin(): never just below 0
    front_high.high_address = true;
    front_high.address.reset();
    CHECK(!empty_range_read(front_high));
    CrashFacts back_null = facts_of("back_of_empty");
    back_null.high_address = false;  // back() faulting at 0 is not an empty range's
    back_null.zero_page = true;
    back_null.address = 0;
    CHECK(!empty_range_read(back_null));
}

TEST_CASE("sanitizer: a read through a pointer into a reallocated vector is a use after free") {
    const CrashFacts c = facts_of("use_after_free");
    CHECK(access_of(c) == "heap-use-after-free: READ 4 bytes, 0 bytes inside 1600 at line 64");
    CHECK(said_of(c) ==
          "read 4 bytes of memory that was already freed: a view, pointer or reference used after the tensor it "
          "points into was destroyed or reassigned, or an index past the end of a live one that landed in freed "
          "memory | reread: " +
              views_doc);
}

TEST_CASE("sanitizer: a view of a returned function's local is a stack use after return") {
    const CrashFacts c = facts_of("stack_use_after_return");
    CHECK(c.kind == "stack-use-after-return");
    CHECK(c.where_line == 80);  // the read, not the local's frame ASan describes below it
    CHECK(sentence_of(c) ==
          "read 4 bytes of a local variable whose function had already ended: a dangling reference or view");
}

TEST_CASE("sanitizer: UBSan's int overflow is a count past 32 bits, at the learner's line and column") {
    const CrashFacts c = facts_of("int_overflow");
    CHECK(c.kind.empty());
    CHECK(c.ub == "signed integer overflow: 1600000000 * 4 cannot be represented in type 'int'");
    CHECK(c.where_line == 84);
    CHECK(c.where_col == 26);  // UBSan's own column, not dropped by the stack's frame at that line
    CHECK(said_of(c) ==
          "undefined behaviour: signed integer overflow: 1600000000 * 4 cannot be represented in type 'int' -- the "
          "count overflowed 32 bits (an int holds up to 2^31 - 1): count in std::size_t or std::uint64_t | reread: "
          "lesson 05 (docs/05_parameter_count.md): counts that pass 2^31");
}

TEST_CASE("sanitizer: the grade's failure names the learner's line, its source and the sentence") {
    const auto f = diagnose_crash(log_text("max_of_empty"), 1, fixture_subject());
    CHECK(f.where == crashes + ":33");
    CHECK(f.source == "const float top = *std::max_element(w.begin(), w.end());");
    CHECK(f.message.rfind(crashes + ":33: read through the end of an empty range", 0) == 0);
    CHECK(f.lesson == bounds_doc);
    CHECK(f.test == "(the grader itself)");
}
