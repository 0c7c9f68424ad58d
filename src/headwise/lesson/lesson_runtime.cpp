// The lesson runtime: the one place where a lesson's flags are parsed, its limits set and its
// errors turned into one line. See lesson.hpp.
//
// Memory: this file replaces the global operator new and operator delete of the lesson programs
// (only they link it). Each allocation is charged before it is made: when the bytes in use plus
// the request would pass half of the memory that was free when the lesson started, the request
// is refused with the size it would have reached, before a page is touched. Every tensor of a
// lesson is counted this way, whichever step made it, so no lesson counts its tensors by hand.
#include "headwise/lesson/lesson.hpp"
#include "headwise/base/limits.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <new>

namespace headwise::lesson {

namespace {

// Signed: a block that some other allocation function made (a sanitizer's, say) and that ours
// frees makes the count dip, never wrap around.
std::atomic<std::int64_t> bytes_in_use{0};
std::atomic<std::int64_t> peak_in_use{0};  // the most bytes_in_use has held since the last reset
std::size_t memory_limit = std::numeric_limits<std::size_t>::max();

// The refusal, written without allocating (it is raised from inside operator new).
struct memory_refused : std::bad_alloc {
    char message[320] = {};
    const char* what() const noexcept override { return message; }
};

// Blocks come from malloc, and their size from malloc_usable_size when they go back: no header,
// so a block is safe to free whichever allocation function made it.
void* allocate(std::size_t size) {
    const auto in_use =
        static_cast<std::size_t>(std::max<std::int64_t>(bytes_in_use.load(std::memory_order_relaxed), 0));
    if (size > memory_limit || in_use > memory_limit - size) {
        const std::size_t now = in_use + size;
        memory_refused refused;
        std::snprintf(refused.message, sizeof refused.message,
                      "at these sizes this would need %zu bytes (%.1f GiB) at once, more than half of the %.1f GiB of "
                      "free memory; use smaller sizes",
                      now, static_cast<double>(now) / double(1ULL << 30),
                      static_cast<double>(memory_limit) * 2.0 / double(1ULL << 30));
        throw refused;
    }
    void* block = std::malloc(size == 0 ? 1 : size);
    if (block == nullptr) throw std::bad_alloc();
    const auto usable = static_cast<std::int64_t>(malloc_usable_size(block));
    const std::int64_t now = bytes_in_use.fetch_add(usable, std::memory_order_relaxed) + usable;
    // The peak rises to `now` unless another thread has raised it further meanwhile.
    std::int64_t peak = peak_in_use.load(std::memory_order_relaxed);
    while (now > peak && !peak_in_use.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {}
    return block;
}

void release(void* p) noexcept {
    if (p == nullptr) return;
    bytes_in_use.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
    std::free(p);
}

std::size_t free_memory() {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
}

}  // namespace

App::App(const std::string& description, const std::string& name)
    : app_(std::make_unique<CLI::App>(description, name)) {}
App::~App() = default;

Option* App::add_option(const std::string& flag, std::string& value, const std::string& help) {
    return options_.emplace_back(std::make_unique<Option>(app_->add_option(flag, value, help))).get();
}
Option* App::add_option(const std::string& flag, int& value, const std::string& help) {
    return options_.emplace_back(std::make_unique<Option>(app_->add_option(flag, value, help))).get();
}
Option* App::add_option(const std::string& flag, std::size_t& value, const std::string& help) {
    return options_.emplace_back(std::make_unique<Option>(app_->add_option(flag, value, help))).get();
}
void App::add_flag(const std::string& flag, bool& value, const std::string& help) { app_->add_flag(flag, value, help); }
std::size_t App::count(const std::string& flag) const { return app_->count(flag); }
App::operator CLI::App&() { return *app_; }

Option* Option::type_name(const std::string& name) {
    option_->type_name(name);
    return this;
}
Option* Option::capture_default_str() {
    option_->capture_default_str();
    return this;
}
Option* Option::check_range(long long lo, long long hi) {
    option_->check(CLI::Range(lo, hi));
    return this;
}
Option* Option::check_member(const std::vector<int>& allowed) {
    option_->check(CLI::IsMember(allowed));
    return this;
}
Option* Option::check_member(const std::vector<std::string>& allowed) {
    option_->check(CLI::IsMember(allowed));
    return this;
}

template <class T, class Bound>
void add_bounded_option(CLI::App& app, const std::string& flag, T& value, const std::string& help, Bound lo, Bound hi) {
    app.add_option(flag, value, help)->check(CLI::Range(lo, hi))->capture_default_str();
}
template void add_bounded_option(CLI::App&, const std::string&, std::size_t&, const std::string&, int, int);
template void add_bounded_option(CLI::App&, const std::string&, int&, const std::string&, int, int);
template void add_bounded_option(CLI::App&, const std::string&, float&, const std::string&, float, float);
template void add_bounded_option(CLI::App&, const std::string&, std::uint64_t&, const std::string&, unsigned, unsigned);

void add_save_figures(CLI::App& app, std::string& dir, const std::string& what) {
    app.add_option("--save-figures", dir, "also draw " + what + " into DIR")->type_name("DIR");
}

int run(CLI::App& app, int argc, char** argv, const std::function<int()>& story) {
    if (const int rc = cli::parse(app, argc, argv); rc >= 0) return rc;
    const std::string name = std::filesystem::path(argc > 0 ? argv[0] : app.get_name()).filename().string();
    // Half of what is free, not all: the machine needs the rest. Unknown: no limit.
    if (const std::size_t free = free_memory(); free > 0) set_memory_limit(free / 2);
    limits::set_work_limit(work_limit, name);
    return cli::guard(name, [&] {
        try {
            return story();
        } catch (const memory_refused& e) {
            throw usage_error(e.what());
        }
    });
}

void set_memory_limit(std::size_t bytes) { memory_limit = bytes; }

std::size_t bytes_allocated() {
    return static_cast<std::size_t>(std::max<std::int64_t>(bytes_in_use.load(std::memory_order_relaxed), 0));
}

std::size_t peak_bytes_allocated() {
    return static_cast<std::size_t>(std::max<std::int64_t>(peak_in_use.load(std::memory_order_relaxed), 0));
}

void reset_peak_bytes_allocated() { peak_in_use.store(bytes_in_use.load(std::memory_order_relaxed)); }

void print_indented(const std::string& block) {
    std::size_t start = 0;
    while (start < block.size()) {
        const std::size_t end = std::min(block.find('\n', start), block.size());
        fmt::print("    {}\n", block.substr(start, end - start));
        start = end + 1;
    }
}

}  // namespace headwise::lesson

// The replaced allocation functions, every form but the over-aligned ones (which keep their own,
// uncounted, path: nothing in the lessons asks for more than 16-byte alignment).
void* operator new(std::size_t size) { return headwise::lesson::allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return headwise::lesson::allocate(size);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return headwise::lesson::allocate(size);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { headwise::lesson::release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { headwise::lesson::release(p); }
void operator delete(void* p) noexcept { headwise::lesson::release(p); }
void operator delete(void* p, std::size_t) noexcept { headwise::lesson::release(p); }
void* operator new[](std::size_t size) { return headwise::lesson::allocate(size); }
void operator delete[](void* p) noexcept { headwise::lesson::release(p); }
void operator delete[](void* p, std::size_t) noexcept { headwise::lesson::release(p); }
