// lesson::run and the limits every lesson runs under (src/headwise/lesson/lesson_runtime.cpp, limits.cpp):
// memory is charged per allocation before it is made, work by each library step before it
// computes, and either limit ends a lesson with one line and exit code 2.
#include "headwise/lesson/lesson.hpp"
#include "headwise/base/limits.hpp"

#include <catch2/catch.hpp>

#include <limits>
#include <string>

using namespace headwise;

namespace {

// argv for lesson::run, as a lesson's main() receives it.
struct Args {
    std::vector<std::string> words;
    std::vector<char*> argv;
    explicit Args(std::vector<std::string> w) : words(std::move(w)) {
        for (auto& s : words) argv.push_back(s.data());
    }
    int argc() const { return static_cast<int>(argv.size()); }
};

// Keeps the compiler from eliding an allocation nobody reads (it may, since C++14).
template <class T>
void escape(T* p) {
    asm volatile("" : : "g"(p) : "memory");
    delete[] p;
}

constexpr double unlimited = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("an allocation past the memory limit is refused before it is made, with the bytes it would need",
          "[lesson]") {
    const std::size_t before = lesson::bytes_allocated();
    lesson::set_memory_limit(before + (1u << 20));
    std::string message;
    std::size_t after = 0;
    try {
        escape(new float[1u << 20]);  // 4 MiB: past the 1 MiB left
        FAIL("the allocation was allowed");
    } catch (const std::bad_alloc& e) {
        after = lesson::bytes_allocated();
        message = e.what();
    }
    lesson::set_memory_limit(std::numeric_limits<std::size_t>::max());
    CHECK(after == before);  // nothing kept from the refused request
    CHECK_THAT(message, Catch::Matches("at these sizes this would need [0-9]+ bytes .*use smaller sizes"));
    CHECK(message.find(std::to_string(before + (4u << 20))) != std::string::npos);
}

TEST_CASE("freed memory no longer counts against the limit", "[lesson]") {
    const std::size_t before = lesson::bytes_allocated();
    {
        const Tensor2 a = Tensor2::from_shape({256, 256});  // 256 KiB
        CHECK(lesson::bytes_allocated() >= before + 256 * 256 * sizeof(float));
    }
    CHECK(lesson::bytes_allocated() == before);
}

TEST_CASE("the peak is the most bytes in use since its reset, freed memory included", "[lesson]") {
    lesson::reset_peak_bytes_allocated();
    const std::size_t before = lesson::bytes_allocated();
    CHECK(lesson::peak_bytes_allocated() == before);
    {
        const Tensor2 a = Tensor2::from_shape({512, 512});  // 1 MiB, freed at the brace
    }
    const Tensor2 b = Tensor2::from_shape({256, 256});  // 256 KiB, kept
    CHECK(lesson::peak_bytes_allocated() >= before + 512 * 512 * sizeof(float));
    CHECK(lesson::peak_bytes_allocated() < before + (512 * 512 + 256 * 256) * sizeof(float));
    lesson::reset_peak_bytes_allocated();
    CHECK(lesson::peak_bytes_allocated() == lesson::bytes_allocated());
}

TEST_CASE("work is charged by the library steps, and the step that passes the limit is named", "[lesson][limits]") {
    limits::set_work_limit(unlimited, "test");
    const double before = limits::work_charged();
    const Tensor3 x = Tensor3::from_shape({2, 3, 4});
    const Tensor2 w = Tensor2::from_shape({5, 4});
    (void)linear(x, w);
    CHECK(limits::work_charged() - before == Approx(2.0 * 6 * 4 * 5));  // 2 * rows * in * out
    limits::set_work_limit(limits::work_charged() + 100.0, "lesson 99");
    CHECK_THROWS_WITH(linear(x, w),
                      Catch::Contains("linear alone needs 2.4e+02") && Catch::Contains("lesson 99 stops at"));
    limits::set_work_limit(unlimited, "test");
}

TEST_CASE("lesson::run ends a lesson past a limit with exit code 2, and a finished one with its own code", "[lesson]") {
    lesson::App app{"a lesson", "99_test"};
    Args ok({"99_test"});
    CHECK(lesson::run(app, ok.argc(), ok.argv.data(), [] { return 0; }) == 0);
    CHECK(lesson::run(app, ok.argc(), ok.argv.data(), [] { return cli::exit_failure; }) == cli::exit_failure);
    CHECK(lesson::run(app, ok.argc(), ok.argv.data(), [] {
              limits::charge_work(1e15, "a huge step");
              return 0;
          }) == cli::exit_usage);
    limits::set_work_limit(unlimited, "test");
    CHECK(lesson::run(app, ok.argc(), ok.argv.data(), [] {
              // More than half of the free memory (run() sets that limit): refused, never touched.
              escape(new char[std::numeric_limits<std::size_t>::max() / 4]);
              return 0;
          }) == cli::exit_usage);
    lesson::set_memory_limit(std::numeric_limits<std::size_t>::max());
    limits::set_work_limit(unlimited, "test");
    Args bad({"99_test", "--no-such-flag"});
    CHECK(lesson::run(app, bad.argc(), bad.argv.data(), [] { return 0; }) == cli::exit_usage);
}
