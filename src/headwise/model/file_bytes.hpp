// headwise/model/file_bytes.hpp -- a model file's bytes: mapped read-only from disk, or a string held
// in memory (tests, fuzzers). What the safetensors and GGUF readers both stand on.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

namespace headwise::model {

class FileBytes {
public:
    // Maps `path` read-only (MAP_POPULATE: every page faulted in at once, as a model is read whole
    // right after it is opened). usage_error, one line starting with the path, when it cannot be
    // opened, is not a regular file or cannot be mapped.
    static std::shared_ptr<const FileBytes> map(const std::filesystem::path& path);
    // Reads `path` whole into memory that starts on a 2 MiB boundary and asks for 2 MiB pages: for
    // a model whose every weight is read at every step (a decoder), a stream through huge pages runs
    // ~1.5x faster than through the page cache's 4 KiB ones (fewer TLB misses, and the hardware
    // prefetcher stops at every 4 KiB page boundary). Errors as map's.
    static std::shared_ptr<const FileBytes> load(const std::filesystem::path& path);
    static std::shared_ptr<const FileBytes> hold(std::string bytes);

    FileBytes(const FileBytes&) = delete;
    FileBytes& operator=(const FileBytes&) = delete;
    ~FileBytes();

    const std::byte* data() const;
    std::size_t size() const;
    // Whether the bytes are this object's heap memory (load, hold) rather than a read-only mapping.
    bool owned() const { return map_ == nullptr; }

private:
    FileBytes() = default;
    std::string owned_;
    void* map_ = nullptr;
    std::size_t map_size_ = 0;
    void* loaded_ = nullptr;  // load's block (std::free), map_size_ bytes of it read
};

}  // namespace headwise::model
