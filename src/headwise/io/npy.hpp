// headwise/io/npy.hpp -- NumPy .npy files in and out, trusting nothing in the file.
//
// Reading checks everything before it allocates or converts: the magic string, the format
// version (1.0, 2.0, 3.0), the header (a Python dict literal with exactly 'descr',
// 'fortran_order' and 'shape'), the dtype (float32, float64 or bool, either byte order), the
// shape (no overflow), and that the data is exactly as long as the shape says. Fortran-order
// arrays are converted to C order. Every problem is a headwise::usage_error whose one-line
// message starts with the file name, so a command can print it and exit 2.
//
// Writing produces float32 C-order files atomically: the data goes to a temporary file next to
// the target, which is renamed over it only on commit. The outputs are recomputable results, so
// they are not fsync'ed (numpy.save and torch.save do not either): a failed command leaves no
// partial file, a power cut may. The learner's own files are another matter (runner/exercise_files).
#pragma once

#include "headwise/base/tensor.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace headwise::npy {

enum class DType { float32, float64, boolean };

// A whole .npy file after validation, values converted to double, in C (row-major) order.
struct Array {
    std::filesystem::path file;
    DType dtype = DType::float32;
    std::string descr;           // as written in the header, e.g. "<f4"
    bool fortran_order = false;  // how the file stored it (values are C order regardless)
    std::vector<std::size_t> shape;
    std::vector<double> values;
};

// "float32", "float64", "bool"
std::string to_string(DType dtype);
// "(2, 5, 32)"
std::string shape_string(const std::vector<std::size_t>& shape);

// Reads and validates a file (see the top of this header). `bytes` is the file content.
Array read(const std::filesystem::path& file);
Array parse(const std::string& bytes, const std::filesystem::path& file);

// The array as a float tensor of rank R: refuses bool arrays, another rank, a zero-length
// dimension, and NaN/Inf (naming the first bad element's index). `what` names the array's
// role in messages, e.g. "--query" or "(B, N_q, d_model)".
template <std::size_t R>
Tensor<R> to_tensor(const Array& a, const std::string& what);

// read() then to_tensor(), with the same checks and messages, but a little-endian float32 C-order
// file (what numpy writes by default) goes straight from the file into the tensor: no float64
// copy of every value (for an 8 MiB input, 24 MiB less memory touched).
template <std::size_t R>
Tensor<R> read_tensor(const std::filesystem::path& file, const std::string& what);

// The array as a boolean mask of rank 2 (true = masked out, PyTorch's convention). Only bool
// files are accepted: PyTorch reads a float key_padding_mask as additive, not as true/false.
Mask2 to_mask(const Array& a, const std::string& what);

// The header of a float32 C-order .npy file of this shape (version 1.0, padded so the data that
// follows starts at a multiple of 64 bytes, as numpy writes it).
std::string encode_header(const std::vector<std::size_t>& shape);

// The bytes of a float32 C-order .npy file holding `t`: encode_header, then the data.
template <std::size_t R>
std::string encode(const Tensor<R>& t);

// A file written under a temporary name beside `target`; commit() renames it into place.
// Destroyed without commit() (an error happened before all outputs were ready), it removes
// the temporary file: a failed command leaves no partial output behind.
class PendingFile {
public:
    PendingFile(const std::filesystem::path& target, const std::string& bytes);
    // The file is these pieces one after the other, written from where they are (no copy).
    PendingFile(const std::filesystem::path& target, const std::vector<std::string_view>& pieces);
    PendingFile(PendingFile&& other) noexcept;
    PendingFile(const PendingFile&) = delete;
    PendingFile& operator=(const PendingFile&) = delete;
    PendingFile& operator=(PendingFile&&) = delete;
    ~PendingFile();

    void commit();
    const std::filesystem::path& target() const { return target_; }

private:
    std::filesystem::path target_;
    std::filesystem::path temp_;
};

// `t` written under a temporary name beside `target`, straight from the tensor's memory (an
// output of 8 MiB is not copied into an 8 MiB string first); commit() puts it in place.
template <std::size_t R>
PendingFile stage(const std::filesystem::path& target, const Tensor<R>& t) {
    const std::string header = encode_header(std::vector<std::size_t>(t.shape().begin(), t.shape().end()));
    return PendingFile(target, {header, {reinterpret_cast<const char*>(t.data()), t.size() * sizeof(float)}});
}

// Writes `t` to `target` atomically (stage + commit).
template <std::size_t R>
void save(const std::filesystem::path& target, const Tensor<R>& t) {
    stage(target, t).commit();
}

}  // namespace headwise::npy
