// headwise/model/safetensors.hpp -- reading a .safetensors file (Hugging Face's weight format), trusting nothing.
//
// The format: 8 bytes little-endian N, then N bytes of JSON, then the data. The JSON is an object
// that maps each tensor's name to {"dtype": "F32", "shape": [512, 384], "data_offsets": [begin, end]}
// (byte offsets into the data that follows the header), plus an optional "__metadata__" object of
// strings. Everything is checked before a byte of data is handed out: N fits the file, the header
// is JSON of that form, every dtype is known, shape products do not overflow, end - begin is exactly
// the shape's size in bytes, every range lies inside the data and no two ranges overlap. Every
// problem is one headwise::usage_error naming the file (and the tensor), so a command can print it
// and exit 2.
//
// open() maps the file read-only (mmap), so opening the 91 MB lesson 07 model costs no copy; the
// data stays valid as long as the File lives. parse() takes bytes (the tests and the fuzzer use it).
#pragma once

#include "headwise/model/file_bytes.hpp"

#include "headwise/base/tensor.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace headwise::safetensors {

enum class DType { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean };

// "F32", "I64", ... as the header spells them, and the size of one element.
std::string_view to_string(DType dtype);
std::size_t element_size(DType dtype);

struct TensorInfo {
    std::string name;
    DType dtype = DType::f32;
    std::vector<std::size_t> shape;
    std::size_t begin = 0;  // byte offsets into the data section
    std::size_t end = 0;
    std::size_t count() const;  // number of elements
};

class File {
public:
    // Maps and validates a file. Throws usage_error (one line, starting with the path).
    static File open(const std::filesystem::path& path);
    // Validates bytes that are already in memory (kept by the File).
    static File parse(std::string bytes, const std::filesystem::path& label);

    const std::filesystem::path& path() const { return path_; }
    const std::vector<TensorInfo>& tensors() const { return tensors_; }  // sorted by name
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    bool contains(std::string_view name) const;
    // The tensor's description; usage_error if the file has no such tensor.
    const TensorInfo& info(std::string_view name) const;
    // Its raw bytes (end - begin of them).
    std::span<const std::byte> bytes(std::string_view name) const;

    // A float32 tensor copied out, after checking its dtype and that its shape is `shape`
    // (usage_error naming the tensor, the expected and the actual shape otherwise).
    std::vector<float> read_f32(std::string_view name, const std::vector<std::size_t>& shape) const;
    // The same, straight into a tensor of rank R.
    template <std::size_t R>
    Tensor<R> tensor(std::string_view name, const std::array<std::size_t, R>& shape) const {
        Tensor<R> t = Tensor<R>::from_shape(shape);
        copy_f32(name, std::vector<std::size_t>(shape.begin(), shape.end()), t.data());
        return t;
    }

private:
    File(std::shared_ptr<const model::FileBytes> storage, std::filesystem::path path);
    void index();
    void copy_f32(std::string_view name, const std::vector<std::size_t>& shape, float* out) const;

    std::shared_ptr<const model::FileBytes> storage_;
    std::filesystem::path path_;
    const std::byte* data_ = nullptr;  // start of the data section
    std::size_t data_size_ = 0;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace headwise::safetensors
