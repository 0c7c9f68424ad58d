#include "headwise/model/file_bytes.hpp"

#include "headwise/base/tensor.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace headwise::model {

std::shared_ptr<const FileBytes> FileBytes::map(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw usage_error(fmt::format("{}: cannot open ({})", path.string(), std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw usage_error(fmt::format("{}: not a regular file", path.string()));
    }
    std::shared_ptr<FileBytes> bytes(new FileBytes());
    const auto size = static_cast<std::size_t>(st.st_size);
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
}

const std::byte* FileBytes::data() const {
    return map_ != nullptr ? static_cast<const std::byte*>(map_) : reinterpret_cast<const std::byte*>(owned_.data());
}

std::size_t FileBytes::size() const { return map_ != nullptr ? map_size_ : owned_.size(); }

}  // namespace headwise::model
