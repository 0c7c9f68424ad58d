// The lesson runtime: the one place where a lesson's flags are parsed, its limits set and its
// errors turned into one line. See lesson.hpp.
//
// Memory: this file replaces the global operator new and operator delete of the lesson programs
// (only they link it). Each allocation is charged before it is made: when the bytes in use plus
// the request would pass half of the memory that was free when the lesson started, the request
// is refused with the size it would have reached, before a page is touched. Every tensor of a
// lesson is counted this way, whichever step made it, so no lesson counts its tensors by hand.
#include "headwise/lesson.hpp"
#include "headwise/limits.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <new>

namespace headwise::lesson {

namespace {

std::atomic<std::size_t> bytes_in_use{0};
std::size_t memory_limit = std::numeric_limits<std::size_t>::max();

// The refusal, written without allocating (it is raised from inside operator new).
struct memory_refused : std::bad_alloc {
    char message[320] = {};
    const char* what() const noexcept override { return message; }
};

constexpr std::size_t header = alignof(std::max_align_t);  // keeps every block max-aligned

void* allocate(std::size_t size) {
    const std::size_t now = bytes_in_use.fetch_add(size, std::memory_order_relaxed) + size;
    if (now > memory_limit) {
        bytes_in_use.fetch_sub(size, std::memory_order_relaxed);
        memory_refused refused;
        std::snprintf(refused.message, sizeof refused.message,
                      "at these sizes this would need %zu bytes (%.1f GiB) at once, more than half of the %.1f GiB of free "
                      "memory; use smaller sizes",
                      now, static_cast<double>(now) / double(1ULL << 30),
                      static_cast<double>(2 * memory_limit) / double(1ULL << 30));
        throw refused;
    }
    void* block = std::malloc(size + header);
    if (block == nullptr) {
        bytes_in_use.fetch_sub(size, std::memory_order_relaxed);
        throw std::bad_alloc();
    }
    *static_cast<std::size_t*>(block) = size;
    return static_cast<char*>(block) + header;
}

void release(void* p) noexcept {
    if (p == nullptr) return;
    void* block = static_cast<char*>(p) - header;
    bytes_in_use.fetch_sub(*static_cast<std::size_t*>(block), std::memory_order_relaxed);
    std::free(block);
}

std::size_t free_memory() {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
}

}  // namespace

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

std::size_t bytes_allocated() { return bytes_in_use.load(std::memory_order_relaxed); }

}  // namespace headwise::lesson

// The replaced allocation functions. The array, nothrow and sized forms of the standard library
// call these two; the over-aligned forms keep their own (uncounted) path.
void* operator new(std::size_t size) { return headwise::lesson::allocate(size); }
void operator delete(void* p) noexcept { headwise::lesson::release(p); }
void operator delete(void* p, std::size_t) noexcept { headwise::lesson::release(p); }
void* operator new[](std::size_t size) { return headwise::lesson::allocate(size); }
void operator delete[](void* p) noexcept { headwise::lesson::release(p); }
void operator delete[](void* p, std::size_t) noexcept { headwise::lesson::release(p); }
// The nothrow forms, spelled out: the standard library's call the two above, but AddressSanitizer
// replaces them with its own, whose blocks then reach the release() above without its header
// (std::stable_sort's temporary buffer in the fused attention did, in every lesson under ASan).
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return headwise::lesson::allocate(size);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p, const std::nothrow_t&) noexcept { headwise::lesson::release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { headwise::lesson::release(p); }
