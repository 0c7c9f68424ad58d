// The runner's operator new: blocks of 1 MiB and more start on a 2 MiB boundary, in huge pages
// (headwise/fast/huge_pages.hpp). Everything else is malloc's, and every block goes back with free.
//
// A command such as `headwise attend --grads` is one process that touches each of its tensors once
// and exits: it pays for every page it touches for the first time, and a tensor that malloc placed
// across 2 MiB boundaries leaves up to 2 MiB at each end to 4 KiB faults. Aligned, the process
// takes about a third of the faults and a few percent less time (docs/performance.md has the runs).
// The lessons have their own operator new (lesson_runtime.cpp: it counts what they allocate).
#include "headwise/fast/huge_pages.hpp"

#include <cstdlib>
#include <new>

namespace {
constexpr std::size_t large_block = std::size_t{1} << 20;
}  // namespace

void* operator new(std::size_t size) {
    void* p = size >= large_block ? headwise::allocate_in_huge_pages(size) : std::malloc(size == 0 ? 1 : size);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
