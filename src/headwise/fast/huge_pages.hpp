// headwise/fast/huge_pages.hpp -- ask for 2 MiB pages under a large buffer before it is first written.
//
// A buffer's first write takes a page fault per 4 KiB page, each costing microseconds (64 MiB
// touched for the first time: a few hundred ms with 4 KiB pages, about half that with transparent
// huge pages). For a one-shot process such as `headwise attend` the faults of its inputs, output
// and workspace can cost as much as the arithmetic (docs/performance.md has the figures). Debian's
// kernels enable transparent huge pages on request ("madvise").
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace headwise {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

// A hint the kernel may ignore: the whole 2 MiB pages inside [p, p + bytes) are backed by huge
// pages when first touched (none in a buffer under 2 MiB).
inline void prefer_huge_pages(void* p, std::size_t bytes) {
    constexpr std::uintptr_t huge = huge_page_bytes;
    const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(p) + huge - 1) & ~(huge - 1);
    const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(huge - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// A block for a large buffer, freed with std::free (nullptr when there is no memory): it starts on
// a 2 MiB boundary, so that all of it but its last partial 2 MiB can be huge pages. A malloc'd
// block starts anywhere and leaves up to 2 MiB at each end to 4 KiB faults (src/runner/allocation.cpp
// has what that costs a one-shot process).
inline void* allocate_in_huge_pages(std::size_t bytes) {
    void* p = nullptr;
    if (::posix_memalign(&p, huge_page_bytes, bytes) != 0) return nullptr;
    prefer_huge_pages(p, bytes);
    return p;
}

}  // namespace headwise
