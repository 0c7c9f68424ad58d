#include "headwise/model/file_bytes.hpp"

#include "headwise/base/tensor.hpp"
#include "headwise/fast/huge_pages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace headwise::model {

namespace {

// An open regular file and its size; usage_error naming the path otherwise.
std::pair<int, std::size_t> open_regular(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw usage_error(fmt::format("{}: cannot open ({})", path.string(), std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw usage_error(fmt::format("{}: not a regular file", path.string()));
    }
    return {fd, static_cast<std::size_t>(st.st_size)};
}

}  // namespace

std::shared_ptr<const FileBytes> FileBytes::load(const std::filesystem::path& path) {
    const auto [fd, size] = open_regular(path);
    std::shared_ptr<FileBytes> bytes(new FileBytes());
    bytes->loaded_ = allocate_in_huge_pages(std::max<std::size_t>(size, 1));
    if (bytes->loaded_ == nullptr) {
        ::close(fd);
        throw usage_error(fmt::format("{}: no memory for its {} bytes", path.string(), size));
    }
    auto* to = static_cast<char*>(bytes->loaded_);
    for (std::size_t done = 0; done < size;) {
        const ssize_t got = ::read(fd, to + done, size - done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            const int err = got < 0 ? errno : EIO;
            ::close(fd);
            throw usage_error(fmt::format("{}: cannot read ({})", path.string(), std::strerror(err)));
        }
        done += static_cast<std::size_t>(got);
    }
    ::close(fd);
    bytes->map_size_ = size;
    return bytes;
}

std::shared_ptr<const FileBytes> FileBytes::map(const std::filesystem::path& path) {
    const auto [fd, size] = open_regular(path);
    std::shared_ptr<FileBytes> bytes(new FileBytes());
    if (size > 0) {
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw usage_error(fmt::format("{}: cannot map ({})", path.string(), std::strerror(err)));
        }
        bytes->map_ = p;
        bytes->map_size_ = size;
    }
    ::close(fd);
    return bytes;
}

std::shared_ptr<const FileBytes> FileBytes::hold(std::string owned) {
    std::shared_ptr<FileBytes> bytes(new FileBytes());
    bytes->owned_ = std::move(owned);
    return bytes;
}

FileBytes::~FileBytes() {
    if (map_ != nullptr) ::munmap(map_, map_size_);
    std::free(loaded_);
}

const std::byte* FileBytes::data() const {
    if (map_ != nullptr) return static_cast<const std::byte*>(map_);
    if (loaded_ != nullptr) return static_cast<const std::byte*>(loaded_);
    return reinterpret_cast<const std::byte*>(owned_.data());
}

std::size_t FileBytes::size() const { return map_ != nullptr || loaded_ != nullptr ? map_size_ : owned_.size(); }

}  // namespace headwise::model
