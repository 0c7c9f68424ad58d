#include "headwise/fast/bandwidth.hpp"

#include "headwise/fast/huge_pages.hpp"
#include "headwise/fast/team.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <memory>
#include <vector>

namespace headwise::fast {

namespace {

// XOR of every 64-bit word: integer operations may be reordered, so the compiler reads the words
// with its widest vector loads, several in flight; the result is returned so that the loop stays.
std::uint64_t fold(const std::uint64_t* p, std::size_t n) {
    std::uint64_t acc[8] = {};
    for (std::size_t i = 0; i + 8 <= n; i += 8)
        for (std::size_t j = 0; j < 8; ++j) acc[j] ^= p[i + j];
    std::uint64_t all = 0;
    for (std::uint64_t a : acc) all ^= a;
    return all;
}

}  // namespace

double read_rate(std::size_t bytes, std::size_t threads, int rounds) {
    const std::size_t words = bytes / sizeof(std::uint64_t);
    // in 2 MiB pages, as lesson 12's weights lie (gguf::File::open): with 4 KiB pages the same loop
    // reads slower (TLB misses), which would flatter a decoder measured against it
    std::unique_ptr<std::uint64_t, void (*)(void*)> buffer(
        static_cast<std::uint64_t*>(allocate_in_huge_pages(words * sizeof(std::uint64_t))), std::free);
    if (!buffer) throw std::bad_alloc();
    for (std::size_t i = 0; i < words; ++i) buffer.get()[i] = i;
    Team team(threads);
    const std::size_t share = words / team.size();
    std::vector<std::uint64_t> sink(team.size());
    double best = 0.0;
    for (int r = 0; r < rounds; ++r) {
        const auto start = std::chrono::steady_clock::now();
        team.run(team.size(), [&](std::size_t i, std::size_t) { sink[i] ^= fold(buffer.get() + i * share, share); });
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, double(share * team.size() * sizeof(std::uint64_t)) / seconds / 1e9);
    }
    volatile std::uint64_t keep = 0;
    for (std::uint64_t s : sink) keep = keep ^ s;
    return best;
}

}  // namespace headwise::fast
