#include "headwise/base/cli.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <unistd.h>

namespace headwise::cli {

namespace {

std::string program_name(std::string_view argv0) {
    return std::filesystem::path(std::string(argv0)).filename().string();
}

bool listed(std::string_view which, std::string_view flag) {
    std::size_t start = 0;
    while (start <= which.size()) {
        const std::size_t end = std::min(which.find(',', start), which.size());
        if (which.substr(start, end - start) == flag) return true;
        start = end + 1;
    }
    return false;
}

// "--seq: Value 0 not in range [1 - 4096]" and friends, folded to one line.
std::string one_line(std::string s) {
    for (char& c : s)
        if (c == '\n' || c == '\r') c = ' ';
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
}

// A seed is a whole number that fits 64 bits. CLI11 on its own quietly wraps "-1" into a huge
// unsigned number, accepts a number past 2^64 - 1 as something else, and says only "Could not
// convert" for "abc": refuse each, saying what a seed may be.
const CLI::Validator non_negative(
    [](std::string& s) {
        const std::string expected =
            fmt::format("{} is not a whole number from 0 to {}", s, std::numeric_limits<std::uint64_t>::max());
        if (!s.empty() && s[0] == '-') return fmt::format("must not be negative: {}", expected);
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return expected;
        return std::string();
    },
    "0..2^64-1");

}  // namespace

void add_lesson_options(CLI::App& app, LessonOptions& o, std::string_view which) {
    if (listed(which, "batch"))
        app.add_option("--batch", o.dims.batch, "batch size B")->check(CLI::Range(1, 64))->capture_default_str();
    if (listed(which, "seq"))
        app.add_option("--seq", o.dims.seq, "sequence length N (tokens)")
            ->check(CLI::Range(1, 4096))
            ->capture_default_str();
    if (listed(which, "d-model"))
        app.add_option("--d-model", o.dims.d_model, "model width d_model")
            ->check(CLI::Range(1, 8192))
            ->capture_default_str();
    if (listed(which, "heads"))
        app.add_option("--heads", o.dims.heads, "number of heads H")->check(CLI::Range(1, 256))->capture_default_str();
    if (listed(which, "seed"))
        app.add_option("--seed", o.seed, "seed for the random inputs and weights")
            ->check(non_negative)
            ->capture_default_str();
    app.add_flag("--quiet", o.quiet, "print results only, not every shape");
}

int parse(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
        return -1;
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        fmt::print(stderr, "{}: {} (see --help)\n", program_name(argc > 0 ? argv[0] : app.get_name()),
                   one_line(e.what()));
        return exit_usage;
    }
}

int guard(std::string_view program, const std::function<int()>& body) {
    const std::string name = program_name(program);
    try {
        return body();
    } catch (const usage_error& e) {
        std::fflush(stdout);
        fmt::print(stderr, "{}: {}\n", name, one_line(e.what()));
        return exit_usage;
    } catch (const std::bad_alloc&) {
        std::fflush(stdout);
        fmt::print(stderr, "{}: out of memory -- try smaller sizes\n", name);
        return exit_usage;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        fmt::print(stderr, "{}: internal error: {}\n", name, one_line(e.what()));
        return exit_failure;
    }
}

void require_memory(std::size_t bytes, std::string_view what) {
    const long pages = sysconf(_SC_AVPHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return;  // unknown: let the allocation decide
    const auto available = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
    if (bytes > available / 2) {
        // Half, not all: the machine (and the lesson's other tensors) need the rest.
        throw usage_error(
            fmt::format("{} would need {} bytes ({:.1f} GiB), more than half of the {:.1f} GiB of free "
                        "memory; use smaller sizes",
                        what, bytes, bytes / double(1ULL << 30), available / double(1ULL << 30)));
    }
}

std::size_t checked_product(std::initializer_list<std::size_t> sizes, std::string_view what) {
    std::size_t p = 1;
    for (std::size_t s : sizes) {
        if (s != 0 && p > std::numeric_limits<std::size_t>::max() / s) {
            throw usage_error(fmt::format("{}: sizes overflow a 64-bit element count", what));
        }
        p *= s;
    }
    return p;
}

void require_divisible(std::size_t d_model, std::size_t heads) {
    if (heads == 0 || d_model % heads != 0) {
        throw usage_error(
            fmt::format("--d-model {} is not divisible by --heads {}: d_head would be {}/{} = {:.4g}, "
                        "but every head needs a whole number of dimensions",
                        d_model, heads, d_model, heads, heads ? double(d_model) / double(heads) : 0.0));
    }
}

bool all_finite(const float* p, std::size_t n) {
    // The largest exponent field seen is below all ones (std::isfinite in a loop with an early
    // return is not vectorised).
    std::uint32_t largest = 0;
    for (std::size_t i = 0; i < n; ++i) largest = std::max(largest, std::bit_cast<std::uint32_t>(p[i]) & 0x7f800000u);
    return largest < 0x7f800000u;
}

}  // namespace headwise::cli
