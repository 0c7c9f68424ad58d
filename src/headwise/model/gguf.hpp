// headwise/model/gguf.hpp -- reading a .gguf file (llama.cpp's model format), trusting nothing.
//
// The format, little-endian throughout:
//   "GGUF"  u32 version  u64 tensor_count  u64 kv_count
//   kv_count × (key: string, u32 value type, value)             the metadata
//   tensor_count × (name: string, u32 n_dims, n_dims × u64 ne,  the tensor infos
//                   u32 GGML type, u64 offset)
//   zero padding up to a multiple of general.alignment (32 when absent)
//   the data section: each tensor at its offset (a multiple of the alignment) from its start
// A string is a u64 length and that many bytes (no terminator). A value type is one of u8 i8 u16
// i16 u32 i32 f32 bool string array u64 i64 f64 (ids 0..12); an array is a u32 element type, a u64
// count and the elements. ne[] lists a tensor's sizes fastest-varying first, so ne[0] is the length
// of a row: this reader reverses it into PyTorch's order, slowest first (token_embd.weight, ne =
// [576, 49152], is shape (49152, 576): one row per token).
//
// Everything is checked before a byte of data is handed out: the magic, the version (2 or 3), every
// count and length against the bytes left in the file (so a claimed 2^60-byte string allocates
// nothing), the nesting of arrays, duplicate keys and tensor names, 1..4 dimensions none of them 0
// and no overflowing product, the GGML type (F32, F16, Q4_0, Q4_1, Q8_0; any other is refused by
// name), rows a whole number of blocks, aligned offsets, every tensor inside the file and no two
// overlapping. Every problem is one headwise::usage_error line that starts with the file's path (and
// names the key or the tensor), so a command can print it and exit 2.
//
// open() maps the file read-only (mmap): the 98 MB lesson 12 model costs no copy, and the data
// stays valid as long as the File (or a copy of it: copies share the mapping) lives. parse() takes
// bytes (the tests and the fuzzer use it). How the quantized blocks decode: headwise/model/quant.hpp.
#pragma once

#include "headwise/model/file_bytes.hpp"

#include "headwise/base/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <functional>
#include <vector>

namespace headwise::gguf {

namespace metadata {
struct Value;  // one metadata value (gguf.cpp)
}

// GGML's ids for the tensor types this reader accepts. A file with any other type (Q6_K, BF16, ...)
// is refused by name: "type Q6_K (14) is not supported: F32, F16, Q4_0, Q4_1, Q8_0 are".
enum class Type : std::uint32_t { f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q8_0 = 8 };

// Where a tensor's rows are in memory: as in the file (row r at data + r * row_bytes()), or regrouped
// by lesson 12's decoder for its AVX-512 product (quant.hpp's panels: Q4_1 rows sixteen side by side).
enum class Layout { file, panels16 };

// "F32", "F16", "Q4_0", "Q4_1", "Q8_0" as ggml spells them.
std::string_view to_string(Type type);
// Elements per block: 1 for F32 and F16, 32 for the quantized types.
std::size_t block_size(Type type);
// Bytes per block: 4, 2, 18, 20, 34 (quant.hpp has the block layouts).
std::size_t block_bytes(Type type);

struct TensorInfo {
    std::string name;
    std::vector<std::size_t> shape;  // PyTorch order, slowest first (ne reversed); a row is shape.back() long
    Type type = Type::f32;
    std::size_t offset = 0;           // bytes from the start of the data section
    std::size_t bytes = 0;            // count() / block_size(type) * block_bytes(type)
    const std::byte* data = nullptr;  // into the File's bytes; valid while the File lives
    Layout layout = Layout::file;
    std::size_t count() const;      // elements
    std::size_t columns() const;    // shape.back(): a row is contiguous
    std::size_t rows() const;       // count() / columns()
    std::size_t row_bytes() const;  // bytes of one row (a whole number of blocks: checked at open)
    // The first byte of row r (std::out_of_range, naming the tensor, when r >= rows();
    // std::logic_error when the tensor is regrouped: its rows are no longer contiguous).
    const std::byte* row(std::size_t r) const;
};

class File {
public:
    // Reads a file into memory (model::FileBytes::load: huge pages, its tensors rewritable) and
    // validates it. Throws usage_error (one line, starting with the path).
    static File open(const std::filesystem::path& path);
    // The same over the file mapped read-only (FileBytes::map): no copy, for a reader that keeps
    // every tensor as it is in the file.
    static File map(const std::filesystem::path& path);
    // Validates bytes that are already in memory (kept by the File); `label` stands for the path.
    static File parse(std::string bytes, const std::filesystem::path& label);

    const std::filesystem::path& path() const { return path_; }
    std::uint32_t version() const { return version_; }       // 2 or 3 (version 1's u32 counts are refused)
    std::size_t alignment() const { return alignment_; }     // general.alignment, or 32
    std::size_t file_bytes() const;                          // the whole file
    std::size_t data_offset() const { return data_start_; }  // where the data section starts in the file

    const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in file order
    bool contains(std::string_view name) const;
    // The tensor called `name`; usage_error naming it and the file when there is none.
    const TensorInfo& tensor(std::string_view name) const;

    // Metadata. Each getter throws usage_error (naming the file and the key) when the key is missing
    // or holds another type; `has` asks first.
    bool has(std::string_view key) const;
    // Any integer type (u8 .. i64); a negative value is refused.
    std::uint64_t get_uint(std::string_view key) const;
    // f32 or f64; an integer is accepted too (converted).
    double get_float(std::string_view key) const;
    bool get_bool(std::string_view key) const;
    const std::string& get_string(std::string_view key) const;
    // An array of strings (tokenizer.ggml.tokens, tokenizer.ggml.merges).
    const std::vector<std::string>& get_strings(std::string_view key) const;
    // An array of any integer type (tokenizer.ggml.token_type); a u64 above INT64_MAX is refused.
    std::vector<std::int64_t> get_ints(std::string_view key) const;

    // Every key in file order with its type ("uint32", "string", "array[string]") and a short
    // printable value: "llama", "30", "1e-05", "true", "[49152 strings]", ["en"] for a short array;
    // a long string is cut (with "...") and control characters are escaped, so each fits one line.
    struct Entry {
        std::string key, type, value;
    };
    std::vector<Entry> metadata() const;

    // Tensor `name`'s bytes to rewrite in place, and its new layout: lesson 12's decoder regroups
    // its matrices once it has read them (quant::regroup_in_panels). The memory is the File's own
    // (open reads the file, parse holds a copy); std::logic_error for bytes mapped read-only.
    void rewrite(std::string_view name, Layout layout, const std::function<void(const TensorInfo&, std::byte*)>& how);

private:
    File(std::shared_ptr<const model::FileBytes> storage, std::filesystem::path path);
    void index();
    const metadata::Value& value(std::string_view key, std::string_view wanted) const;

    std::shared_ptr<const model::FileBytes> storage_;
    std::filesystem::path path_;
    std::uint32_t version_ = 0;
    std::size_t alignment_ = 32;
    std::size_t data_start_ = 0;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, std::size_t, std::less<>> tensor_index_;
    std::vector<std::pair<std::string, std::shared_ptr<const metadata::Value>>> keys_;  // file order
    std::map<std::string, std::size_t, std::less<>> key_index_;
};

}  // namespace headwise::gguf
