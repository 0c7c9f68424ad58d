#include "headwise/fast/fused_workspace.hpp"

#include "headwise/fast/huge_pages.hpp"

#include <new>

namespace headwise::fast {

float* thread_workspace(std::size_t n, int slot) {
    // Aligned to 2 MiB huge pages: a first call, e.g. `headwise attend`'s only one, then takes a
    // few dozen page faults instead of thousands. Allocated with operator new, so that a lesson's
    // memory limit (lesson_runtime.cpp replaces every form of it) counts the workspace too.
    constexpr std::align_val_t huge_page{std::size_t{2} << 20};
    struct Block {
        float* data = nullptr;
        std::size_t size = 0;
        ~Block() { ::operator delete(data, huge_page); }
    };
    thread_local Block blocks[2];
    Block& b = blocks[slot];
    if (b.size < n) {
        ::operator delete(b.data, huge_page);
        b.data = nullptr;
        b.size = 0;
        const auto align = static_cast<std::size_t>(huge_page);
        const std::size_t bytes = (n * sizeof(float) + align - 1) / align * align;
        void* p = ::operator new(bytes, huge_page);
        prefer_huge_pages(p, bytes);
        b.data = static_cast<float*>(p);
        b.size = bytes / sizeof(float);
    }
    return b.data;
}

}  // namespace headwise::fast
