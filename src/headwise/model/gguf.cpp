#include "headwise/model/gguf.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace headwise::gguf {

static_assert(std::endian::native == std::endian::little, "GGUF data is little-endian; this reader copies it as is");

namespace {

// ---------------------------------------------------------------------------------------------
// What the format names

// The value types of the metadata, by their ids in the file.
enum class ValueType : std::uint32_t {
    u8 = 0,
    i8 = 1,
    u16 = 2,
    i16 = 3,
    u32 = 4,
    i32 = 5,
    f32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    u64 = 10,
    i64 = 11,
    f64 = 12
};
constexpr std::uint32_t value_type_count = 13;
constexpr std::string_view value_type_names[value_type_count] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                                                 "int32",  "float32", "bool",   "string", "array",
                                                                 "uint64", "int64",   "float64"};

std::string_view name_of(ValueType t) { return value_type_names[static_cast<std::uint32_t>(t)]; }

// Bytes of one element in the file: a string or an array takes at least its 8-byte length (an
// array also its 4-byte element type), which bounds how many of them the bytes left can hold.
std::size_t min_size(ValueType t) {
    switch (t) {
        case ValueType::u8:
        case ValueType::i8:
        case ValueType::boolean:
            return 1;
        case ValueType::u16:
        case ValueType::i16:
            return 2;
        case ValueType::u32:
        case ValueType::i32:
        case ValueType::f32:
            return 4;
        case ValueType::u64:
        case ValueType::i64:
        case ValueType::f64:
        case ValueType::string:
            return 8;
        case ValueType::array:
            return 12;
    }
    return 1;
}

bool is_integer(ValueType t) {
    switch (t) {
        case ValueType::u8:
        case ValueType::i8:
        case ValueType::u16:
        case ValueType::i16:
        case ValueType::u32:
        case ValueType::i32:
        case ValueType::u64:
        case ValueType::i64:
            return true;
        default:
            return false;
    }
}
bool is_signed(ValueType t) {
    return t == ValueType::i8 || t == ValueType::i16 || t == ValueType::i32 || t == ValueType::i64;
}

// Every GGML type id with its name, so that a refused type is named (ids 4, 5 and 31..33 were
// retired from ggml and are not types any more).
struct GgmlType {
    std::uint32_t id;
    std::string_view name;
    std::size_t block_size, block_bytes;  // 0 for the types this reader does not decode
};
constexpr GgmlType ggml_types[] = {
    {0, "F32", 1, 4},     {1, "F16", 1, 2},      {2, "Q4_0", 32, 18}, {3, "Q4_1", 32, 20},  {6, "Q5_0", 0, 0},
    {7, "Q5_1", 0, 0},    {8, "Q8_0", 32, 34},   {9, "Q8_1", 0, 0},   {10, "Q2_K", 0, 0},   {11, "Q3_K", 0, 0},
    {12, "Q4_K", 0, 0},   {13, "Q5_K", 0, 0},    {14, "Q6_K", 0, 0},  {15, "Q8_K", 0, 0},   {16, "IQ2_XXS", 0, 0},
    {17, "IQ2_XS", 0, 0}, {18, "IQ3_XXS", 0, 0}, {19, "IQ1_S", 0, 0}, {20, "IQ4_NL", 0, 0}, {21, "IQ3_S", 0, 0},
    {22, "IQ2_S", 0, 0},  {23, "IQ4_XS", 0, 0},  {24, "I8", 0, 0},    {25, "I16", 0, 0},    {26, "I32", 0, 0},
    {27, "I64", 0, 0},    {28, "F64", 0, 0},     {29, "IQ1_M", 0, 0}, {30, "BF16", 0, 0},   {34, "TQ1_0", 0, 0},
    {35, "TQ2_0", 0, 0},  {39, "MXFP4", 0, 0}};

const GgmlType* find_type(std::uint32_t id) {
    for (const GgmlType& t : ggml_types)
        if (t.id == id) return &t;
    return nullptr;
}

const GgmlType& type_entry(Type type) {
    const GgmlType* t = find_type(static_cast<std::uint32_t>(type));
    if (t == nullptr || t->block_size == 0) throw std::invalid_argument("headwise::gguf: not a supported Type");
    return *t;
}

constexpr std::uint32_t max_dims = 4;         // GGML_MAX_DIMS
constexpr std::uint32_t max_array_depth = 8;  // arrays of arrays of ...: none in practice, bounded here
constexpr std::size_t max_key_bytes = 65535;  // the spec's limit on a key's length

// A name or a value fit for a one-line message: control characters escaped, at most `limit`
// bytes of the original (cut at a UTF-8 character boundary, marked with "...").
std::string printable(std::string_view s, std::size_t limit = 80) {
    std::size_t keep = s.size();
    bool cut = false;
    if (keep > limit) {
        keep = limit;
        while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep;
        cut = true;
    }
    std::string out;
    for (std::size_t i = 0; i < keep; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (c == '\\' || c == '"') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7F)
            out += fmt::format("\\x{:02x}", c);
        else
            out += static_cast<char>(c);
    }
    if (cut) out += "...";
    return out;
}

std::string named(std::string_view s) { return fmt::format("\"{}\"", printable(s)); }

// ---------------------------------------------------------------------------------------------
// A cursor over the file's bytes: every read is bounds-checked and names what it was reading.

class Reader {
public:
    Reader(const std::byte* base, std::size_t size, const std::string& file) : base_(base), size_(size), file_(file) {}

    std::size_t pos() const { return pos_; }
    std::size_t left() const { return size_ - pos_; }
    const std::string& file() const { return file_; }

    void need(std::size_t n, std::string_view what) const {
        if (n > left()) {
            throw usage_error(fmt::format("{}: truncated: {} at byte {} needs {} bytes but only {} are left", file_,
                                          what, pos_, n, left()));
        }
    }
    template <class T>
    T read(std::string_view what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, base_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    void skip(std::size_t n, std::string_view what) {
        need(n, what);
        pos_ += n;
    }
    // A u64 length and that many bytes; the length is checked against the bytes left before
    // anything is allocated.
    std::string_view string(std::string_view what) {
        const auto n = read<std::uint64_t>(what);
        if (n > left()) {
            throw usage_error(
                fmt::format("{}: {} claims {} bytes but only {} are left in the file", file_, what, n, left()));
        }
        const std::string_view s(reinterpret_cast<const char*>(base_ + pos_), static_cast<std::size_t>(n));
        pos_ += static_cast<std::size_t>(n);
        return s;
    }

private:
    const std::byte* base_;
    std::size_t size_;
    std::size_t pos_ = 0;
    const std::string& file_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Types and tensor infos

std::string_view to_string(Type type) { return type_entry(type).name; }
std::size_t block_size(Type type) { return type_entry(type).block_size; }
std::size_t block_bytes(Type type) { return type_entry(type).block_bytes; }

std::size_t TensorInfo::count() const {
    std::size_t n = 1;
    for (std::size_t s : shape) n *= s;  // checked against overflow when the file was opened
    return n;
}
std::size_t TensorInfo::columns() const { return shape.empty() ? 0 : shape.back(); }
std::size_t TensorInfo::rows() const { return columns() == 0 ? 0 : count() / columns(); }
std::size_t TensorInfo::row_bytes() const { return columns() / block_size(type) * block_bytes(type); }

const std::byte* TensorInfo::row(std::size_t r) const {
    if (r >= rows()) {
        throw std::out_of_range(
            fmt::format("tensor \"{}\" has {} rows, row {} was asked for", printable(name), rows(), r));
    }
    if (layout != Layout::file)
        throw std::logic_error(
            fmt::format("tensor \"{}\" is regrouped in panels: its rows are not contiguous "
                        "(quant::dequantize_rows reads them)",
                        printable(name)));
    return data + r * row_bytes();
}

// ---------------------------------------------------------------------------------------------
// A metadata value: scalars decoded; strings and arrays of strings copied; other arrays left in
// the file (their element type, count and where they start), decoded when asked for.

namespace metadata {
struct Value {
    ValueType type = ValueType::u8;
    std::uint64_t u = 0;                // unsigned integers and bool
    std::int64_t i = 0;                 // signed integers
    double f = 0;                       // f32, f64
    std::string text;                   // a string
    ValueType element = ValueType::u8;  // an array's
    std::uint64_t count = 0;
    std::size_t at = 0;                // a numeric array's first element, in the file
    std::vector<std::string> strings;  // an array of strings
};
}  // namespace metadata
using metadata::Value;

namespace {

// Skips one value of type `t` (any depth of arrays, at most max_array_depth), checking lengths.
void skip_value(Reader& in, ValueType t, std::uint32_t depth, const std::string& what);

// An array's header: its element type (known) and a count that the bytes left can hold.
std::pair<ValueType, std::uint64_t> array_header(Reader& in, std::uint32_t depth, const std::string& what) {
    if (depth > max_array_depth) {
        throw usage_error(fmt::format("{}: {} nests arrays more than {} deep", in.file(), what, max_array_depth));
    }
    const auto raw = in.read<std::uint32_t>(what + "'s element type");
    if (raw >= value_type_count) {
        throw usage_error(fmt::format("{}: {} is an array of unknown value type {}", in.file(), what, raw));
    }
    const auto element = static_cast<ValueType>(raw);
    const auto count = in.read<std::uint64_t>(what + "'s length");
    if (count > in.left() / min_size(element)) {
        throw usage_error(fmt::format("{}: {} claims {} {} elements but only {} bytes are left in the file", in.file(),
                                      what, count, name_of(element), in.left()));
    }
    return {element, count};
}

void skip_value(Reader& in, ValueType t, std::uint32_t depth, const std::string& what) {
    if (t == ValueType::string) {
        (void)in.string(what);
    } else if (t == ValueType::array) {
        const auto [element, count] = array_header(in, depth + 1, what);
        if (element == ValueType::string || element == ValueType::array) {
            for (std::uint64_t k = 0; k < count; ++k) skip_value(in, element, depth + 1, what);
        } else {
            in.skip(static_cast<std::size_t>(count) * min_size(element), what);
        }
    } else {
        in.skip(min_size(t), what);
    }
}

Value read_value(Reader& in, ValueType t, const std::string& what) {
    Value v;
    v.type = t;
    switch (t) {
        case ValueType::u8:
            v.u = in.read<std::uint8_t>(what);
            break;
        case ValueType::u16:
            v.u = in.read<std::uint16_t>(what);
            break;
        case ValueType::u32:
            v.u = in.read<std::uint32_t>(what);
            break;
        case ValueType::u64:
            v.u = in.read<std::uint64_t>(what);
            break;
        case ValueType::i8:
            v.i = in.read<std::int8_t>(what);
            break;
        case ValueType::i16:
            v.i = in.read<std::int16_t>(what);
            break;
        case ValueType::i32:
            v.i = in.read<std::int32_t>(what);
            break;
        case ValueType::i64:
            v.i = in.read<std::int64_t>(what);
            break;
        case ValueType::f32:
            v.f = in.read<float>(what);
            break;
        case ValueType::f64:
            v.f = in.read<double>(what);
            break;
        case ValueType::boolean: {
            const auto b = in.read<std::uint8_t>(what);
            if (b > 1) throw usage_error(fmt::format("{}: {} is a bool stored as {}, not 0 or 1", in.file(), what, b));
            v.u = b;
            break;
        }
        case ValueType::string:
            v.text = std::string(in.string(what));
            break;
        case ValueType::array: {
            const auto [element, count] = array_header(in, 1, what);
            v.element = element;
            v.count = count;
            v.at = in.pos();
            if (element == ValueType::string) {
                v.strings.reserve(static_cast<std::size_t>(count));  // count <= bytes left / 8
                for (std::uint64_t k = 0; k < count; ++k) v.strings.emplace_back(in.string(what));
            } else if (element == ValueType::array) {
                for (std::uint64_t k = 0; k < count; ++k) skip_value(in, element, 1, what);
            } else {
                in.skip(static_cast<std::size_t>(count) * min_size(element), what);  // decoded when asked for
            }
            break;
        }
    }
    return v;
}

// Element k of a numeric array that stays in the file, as a signed 64-bit integer (false when it
// does not fit: a u64 above INT64_MAX).
bool array_int(const std::byte* p, ValueType t, std::int64_t& out) {
    auto load = [&](auto v) {
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (t) {
        case ValueType::u8:
            out = load(std::uint8_t{});
            return true;
        case ValueType::i8:
            out = load(std::int8_t{});
            return true;
        case ValueType::u16:
            out = load(std::uint16_t{});
            return true;
        case ValueType::i16:
            out = load(std::int16_t{});
            return true;
        case ValueType::u32:
            out = load(std::uint32_t{});
            return true;
        case ValueType::i32:
            out = load(std::int32_t{});
            return true;
        case ValueType::i64:
            out = load(std::int64_t{});
            return true;
        case ValueType::u64: {
            const auto u = load(std::uint64_t{});
            out = static_cast<std::int64_t>(u);
            return u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        }
        default:
            return false;
    }
}

std::string type_text(const Value& v) {
    if (v.type == ValueType::array) return fmt::format("array[{}]", name_of(v.element));
    return std::string(name_of(v.type));
}

std::string scalar_text(const Value& v) {
    switch (v.type) {
        case ValueType::u8:
        case ValueType::u16:
        case ValueType::u32:
        case ValueType::u64:
            return fmt::format("{}", v.u);
        case ValueType::i8:
        case ValueType::i16:
        case ValueType::i32:
        case ValueType::i64:
            return fmt::format("{}", v.i);
        case ValueType::f32:
            return fmt::format("{}", static_cast<float>(v.f));
        case ValueType::f64:
            return fmt::format("{}", v.f);
        case ValueType::boolean:
            return v.u != 0 ? "true" : "false";
        case ValueType::string:
            return printable(v.text, 60);
        case ValueType::array:
            break;
    }
    return "?";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
File::File(std::shared_ptr<const model::FileBytes> storage, std::filesystem::path path)
    : storage_(std::move(storage)), path_(std::move(path)) {
    index();
}

// Read whole into huge pages rather than mapped: a decoder streams every weight at every token.
File File::open(const std::filesystem::path& path) { return File(model::FileBytes::load(path), path); }

File File::map(const std::filesystem::path& path) { return File(model::FileBytes::map(path), path); }

File File::parse(std::string bytes, const std::filesystem::path& label) {
    return File(model::FileBytes::hold(std::move(bytes)), label);
}

std::size_t File::file_bytes() const { return storage_->size(); }

void File::rewrite(std::string_view name, Layout layout,
                   const std::function<void(const TensorInfo&, std::byte*)>& how) {
    if (!storage_->owned())
        throw std::logic_error(fmt::format("{}: mapped read-only, its tensors cannot be rewritten", path_.string()));
    TensorInfo& t = tensors_.at(tensor_index_.at(std::string(name)));
    how(t, const_cast<std::byte*>(t.data));  // the File's own heap memory (FileBytes::owned)
    t.layout = layout;
}

// ---------------------------------------------------------------------------------------------
// Reading and checking the header, the metadata and the tensor infos, in file order.

namespace {

struct Counts {
    std::uint32_t version;
    std::uint64_t tensors, keys;
};

// "GGUF", a version this reader knows, and counts that the bytes left can hold.
Counts read_header(Reader& in, const std::byte* base, std::size_t size) {
    const std::string& file = in.file();
    if (size < 4 || std::memcmp(base, "GGUF", 4) != 0) {
        const std::string start =
            printable(std::string_view(reinterpret_cast<const char*>(base), std::min<std::size_t>(size, 4)));
        throw usage_error(fmt::format("{}: not a GGUF file (it starts with \"{}\", not \"GGUF\")", file, start));
    }
    in.skip(4, "the magic");
    Counts c{};
    c.version = in.read<std::uint32_t>("the version");
    if (c.version == 1) {
        throw usage_error(
            fmt::format("{}: GGUF version 1 (32-bit counts) is not supported: versions 2 and 3 are", file));
    }
    if (c.version != 2 && c.version != 3) {
        const bool swapped = c.version == 0x02000000u || c.version == 0x03000000u;
        throw usage_error(fmt::format("{}: GGUF version {} is not supported: versions 2 and 3 are{}", file, c.version,
                                      swapped ? " (this looks like a big-endian file)" : ""));
    }
    c.tensors = in.read<std::uint64_t>("the tensor count");
    c.keys = in.read<std::uint64_t>("the metadata count");
    // The smallest key-value pair is 13 bytes (an empty key, a type, a u8); the smallest tensor
    // info 32 (an empty name, one dimension, a type, an offset).
    if (c.keys > in.left() / 13) {
        throw usage_error(
            fmt::format("{}: the header claims {} metadata entries but only {} bytes follow", file, c.keys, in.left()));
    }
    if (c.tensors > in.left() / 32) {
        throw usage_error(
            fmt::format("{}: the header claims {} tensors but only {} bytes follow", file, c.tensors, in.left()));
    }
    return c;
}

// Tensor info k: name, sizes (none 0, no overflow, rows of whole blocks), a supported type and
// the offset; its data pointer is set by place_tensors once the data section is known.
TensorInfo read_tensor_info(Reader& in, std::uint64_t k) {
    const std::string& file = in.file();
    TensorInfo t;
    t.name = std::string(in.string(fmt::format("tensor {}'s name", k)));
    auto bad = [&](std::string_view why) {
        return usage_error(fmt::format("{}: tensor {}: {}", file, named(t.name), why));
    };
    if (t.name.empty()) throw usage_error(fmt::format("{}: tensor {} has an empty name", file, k));
    const std::string what = fmt::format("tensor {}", named(t.name));
    const auto n_dims = in.read<std::uint32_t>(what + "'s dimension count");
    if (n_dims == 0 || n_dims > max_dims)
        throw bad(fmt::format("{} dimensions (1 to {} are allowed)", n_dims, max_dims));
    std::vector<std::uint64_t> ne(n_dims);
    for (auto& n : ne) n = in.read<std::uint64_t>(what + "'s sizes");
    const auto type_id = in.read<std::uint32_t>(what + "'s type");
    t.offset = in.read<std::uint64_t>(what + "'s offset");
    const std::string ne_text = fmt::format("ne [{}]", fmt::join(ne, ", "));

    const GgmlType* known = find_type(type_id);
    if (known == nullptr) throw bad(fmt::format("type {} is not a GGML type", type_id));
    if (known->block_size == 0) {
        throw bad(fmt::format("type {} ({}) is not supported: F32, F16, Q4_0, Q4_1, Q8_0 are", known->name, type_id));
    }
    t.type = static_cast<Type>(type_id);
    std::size_t count = 1;
    for (const std::uint64_t n : ne) {
        if (n == 0) throw bad(fmt::format("{} has a dimension of 0", ne_text));
        if (n > std::numeric_limits<std::size_t>::max() / count) throw bad(fmt::format("{} overflows", ne_text));
        count *= static_cast<std::size_t>(n);
    }
    if (ne[0] % known->block_size != 0) {
        throw bad(fmt::format("{} rows of {} elements are not a whole number of {}-element {} blocks", ne_text, ne[0],
                              known->block_size, known->name));
    }
    const std::size_t blocks = count / known->block_size;
    if (blocks > std::numeric_limits<std::size_t>::max() / known->block_bytes)
        throw bad(fmt::format("{} overflows", ne_text));
    t.bytes = blocks * known->block_bytes;
    t.shape.assign(ne.rbegin(), ne.rend());  // slowest first
    return t;
}

// Every tensor at an aligned offset inside the data section base[data_start, size), no two
// overlapping; then each gets its data pointer.
void place_tensors(std::vector<TensorInfo>& tensors, const std::byte* base, std::size_t data_start, std::size_t size,
                   std::size_t alignment, const std::string& file) {
    const std::size_t data_size = size - data_start;
    for (TensorInfo& t : tensors) {
        auto bad = [&](std::string_view why) {
            return usage_error(fmt::format("{}: tensor {}: {}", file, named(t.name), why));
        };
        if (t.offset % alignment != 0)
            throw bad(fmt::format("offset {} is not a multiple of the alignment {}", t.offset, alignment));
        if (t.offset > data_size || t.bytes > data_size - t.offset) {
            throw bad(fmt::format("{} ({}) needs {} bytes from offset {} but the data section has {} (truncated?)",
                                  to_string(t.type), fmt::join(t.shape, ", "), t.bytes, t.offset, data_size));
        }
        t.data = base + data_start + t.offset;
    }
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(tensors.size());
    for (const TensorInfo& t : tensors) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
        return a->offset < b->offset || (a->offset == b->offset && a->bytes < b->bytes);
    });
    for (std::size_t k = 1; k < by_offset.size(); ++k) {
        const TensorInfo& a = *by_offset[k - 1];
        const TensorInfo& b = *by_offset[k];
        if (b.offset < a.offset + a.bytes) {
            throw usage_error(fmt::format("{}: tensors {} (bytes [{}, {})) and {} (from byte {}) overlap in the data",
                                          file, named(a.name), a.offset, a.offset + a.bytes, named(b.name), b.offset));
        }
    }
}

}  // namespace

void File::index() {
    const std::string file = path_.string();
    const std::byte* base = storage_->data();
    const std::size_t size = storage_->size();
    Reader in(base, size, file);
    const Counts counts = read_header(in, base, size);
    version_ = counts.version;

    // Metadata, in file order.
    keys_.reserve(static_cast<std::size_t>(counts.keys));
    for (std::uint64_t k = 0; k < counts.keys; ++k) {
        const std::string_view key = in.string(fmt::format("metadata key {}", k));
        if (key.empty()) throw usage_error(fmt::format("{}: metadata key {} is empty", file, k));
        if (key.size() > max_key_bytes) {
            throw usage_error(
                fmt::format("{}: metadata key {} is {} bytes long (at most {})", file, k, key.size(), max_key_bytes));
        }
        const std::string what = fmt::format("the value of {}", named(key));
        const auto raw = in.read<std::uint32_t>(what + "'s type");
        if (raw >= value_type_count)
            throw usage_error(fmt::format("{}: metadata {} has unknown value type {}", file, named(key), raw));
        Value v = read_value(in, static_cast<ValueType>(raw), what);
        if (key_index_.count(key) != 0)
            throw usage_error(fmt::format("{}: metadata key {} appears twice", file, named(key)));
        key_index_.emplace(std::string(key), keys_.size());
        keys_.emplace_back(std::string(key), std::make_shared<const Value>(std::move(v)));
    }
    if (has("general.alignment")) {
        const Value& a = value("general.alignment", "");
        if (!is_integer(a.type) || is_signed(a.type) || a.u == 0 || !std::has_single_bit(a.u) ||
            a.u > (std::uint64_t{1} << 30)) {
            throw usage_error(fmt::format("{}: general.alignment ({} {}) is not a power of two up to 2^30", file,
                                          type_text(a), scalar_text(a)));
        }
        alignment_ = static_cast<std::size_t>(a.u);
    }

    // Tensor infos, in file order.
    tensors_.reserve(static_cast<std::size_t>(counts.tensors));
    for (std::uint64_t k = 0; k < counts.tensors; ++k) {
        TensorInfo t = read_tensor_info(in, k);
        if (tensor_index_.count(t.name) != 0)
            throw usage_error(fmt::format("{}: tensor {}: the name appears twice", file, named(t.name)));
        tensor_index_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }

    // The data section: after the infos, padded to the alignment.
    const std::size_t end_of_infos = in.pos();
    data_start_ = end_of_infos + (alignment_ - end_of_infos % alignment_) % alignment_;
    if (data_start_ > size) {
        if (!tensors_.empty()) {
            throw usage_error(
                fmt::format("{}: truncated: the data section should start at byte {} (alignment {}) but "
                            "the file has {} bytes",
                            file, data_start_, alignment_, size));
        }
        data_start_ = size;  // no tensors, no data: the padding may be left out
    }
    place_tensors(tensors_, base, data_start_, size, alignment_, file);
}

// ---------------------------------------------------------------------------------------------
// Lookups

bool File::contains(std::string_view name) const { return tensor_index_.find(name) != tensor_index_.end(); }

const TensorInfo& File::tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    if (it == tensor_index_.end()) {
        throw usage_error(
            fmt::format("{}: no tensor {} (the file holds {} tensors)", path_.string(), named(name), tensors_.size()));
    }
    return tensors_[it->second];
}

bool File::has(std::string_view key) const { return key_index_.find(key) != key_index_.end(); }

const Value& File::value(std::string_view key, std::string_view wanted) const {
    const auto it = key_index_.find(key);
    if (it == key_index_.end()) {
        throw usage_error(fmt::format("{}: no metadata key {}{}", path_.string(), named(key),
                                      wanted.empty() ? "" : fmt::format(" (wanted {})", wanted)));
    }
    return *keys_[it->second].second;
}

namespace {
usage_error wrong_type(const std::filesystem::path& path, std::string_view key, const Value& v,
                       std::string_view wanted) {
    return usage_error(fmt::format("{}: metadata {} is {}, not {}", path.string(), named(key), type_text(v), wanted));
}
}  // namespace

std::uint64_t File::get_uint(std::string_view key) const {
    const Value& v = value(key, "an integer");
    if (!is_integer(v.type)) throw wrong_type(path_, key, v, "an integer");
    if (!is_signed(v.type)) return v.u;
    if (v.i < 0) {
        throw usage_error(
            fmt::format("{}: metadata {} is {}, a count or id cannot be negative", path_.string(), named(key), v.i));
    }
    return static_cast<std::uint64_t>(v.i);
}

double File::get_float(std::string_view key) const {
    const Value& v = value(key, "a number");
    if (v.type == ValueType::f32 || v.type == ValueType::f64) return v.f;
    if (is_integer(v.type)) return is_signed(v.type) ? static_cast<double>(v.i) : static_cast<double>(v.u);
    throw wrong_type(path_, key, v, "a number");
}

bool File::get_bool(std::string_view key) const {
    const Value& v = value(key, "a bool");
    if (v.type != ValueType::boolean) throw wrong_type(path_, key, v, "a bool");
    return v.u != 0;
}

const std::string& File::get_string(std::string_view key) const {
    const Value& v = value(key, "a string");
    if (v.type != ValueType::string) throw wrong_type(path_, key, v, "a string");
    return v.text;
}

const std::vector<std::string>& File::get_strings(std::string_view key) const {
    const Value& v = value(key, "an array of strings");
    if (v.type != ValueType::array || v.element != ValueType::string)
        throw wrong_type(path_, key, v, "an array of strings");
    return v.strings;
}

std::vector<std::int64_t> File::get_ints(std::string_view key) const {
    const Value& v = value(key, "an array of integers");
    if (v.type != ValueType::array || !is_integer(v.element)) throw wrong_type(path_, key, v, "an array of integers");
    const std::size_t step = min_size(v.element);
    std::vector<std::int64_t> out(static_cast<std::size_t>(v.count));
    for (std::size_t k = 0; k < out.size(); ++k) {
        if (!array_int(storage_->data() + v.at + k * step, v.element, out[k])) {
            throw usage_error(fmt::format("{}: metadata {}[{}] = {} does not fit a signed 64-bit integer",
                                          path_.string(), named(key), k, static_cast<std::uint64_t>(out[k])));
        }
    }
    return out;
}

std::vector<File::Entry> File::metadata() const {
    std::vector<Entry> out;
    out.reserve(keys_.size());
    for (const auto& [key, ptr] : keys_) {
        const Value& v = *ptr;
        std::string text;
        if (v.type != ValueType::array) {
            text = scalar_text(v);
        } else if (v.element == ValueType::string && v.count <= 4) {
            std::vector<std::string> items;
            for (const std::string& s : v.strings) items.push_back(fmt::format("\"{}\"", printable(s, 20)));
            text = fmt::format("[{}]", fmt::join(items, ", "));
        } else if (v.element == ValueType::string) {
            text = fmt::format("[{} strings]", v.count);
        } else {
            text = fmt::format("[{} {}]", v.count, name_of(v.element));
        }
        out.push_back({key, type_text(v), std::move(text)});
    }
    return out;
}

}  // namespace headwise::gguf
