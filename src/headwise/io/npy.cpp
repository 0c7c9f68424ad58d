// headwise/io/npy.cpp -- a strict .npy reader and an atomic float32 writer.
//
// Why not xt::load_npy for reading: on a hostile file it reads past a truncated end without
// noticing (the missing bytes stay uninitialised), reads the header length through signed chars
// (a length whose low byte is 128 or more comes out wrong), allocates whatever the shape says before
// looking at the data, parses "-1" as a huge size, and throws "formats not matching" for
// float64. The format is small (numpy's NEP 1), so it is parsed here, byte by byte, and written
// here too (encode(): one copy of the data, where xt::dump_npy made several).
#include "headwise/io/npy.hpp"

#include "headwise/base/cli.hpp"
#include "headwise/base/names.hpp"
#include "headwise/fast/huge_pages.hpp"

#include <fmt/format.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>  // renameat2
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace headwise::npy {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian machine");

namespace {

constexpr char magic[] = "\x93NUMPY";
constexpr std::size_t magic_len = 6;
constexpr std::size_t max_header_len = 1 << 20;  // numpy itself refuses headers over 10 kB by default

[[noreturn]] void fail(const fs::path& file, const std::string& what) {
    throw usage_error(fmt::format("{}: {}", file.string(), what));
}

// The header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
    HeaderParser(std::string_view text, const fs::path& file) : s_(text), file_(file) {}

    void parse(std::string& descr, bool& fortran_order, std::vector<std::size_t>& shape) {
        bool seen_descr = false, seen_fortran = false, seen_shape = false;
        skip_space();
        sequence('{', '}', "the header dict", [&] {
            const std::string key = string_literal();
            skip_space();
            expect(':');
            skip_space();
            if (key == "descr") {
                if (peek() == '[') bad("structured dtypes (a list in 'descr') are not supported");
                descr = string_literal();
                once(seen_descr, key);
            } else if (key == "fortran_order") {
                fortran_order = boolean();
                once(seen_fortran, key);
            } else if (key == "shape") {
                shape = tuple();
                once(seen_shape, key);
            } else {
                bad(fmt::format("unexpected key '{}' in the header", key));
            }
        });
        skip_space();
        if (pos_ != s_.size()) bad("unexpected text after the header dict");
        if (!seen_descr || !seen_fortran || !seen_shape) {
            bad(fmt::format("the header lacks '{}'", !seen_descr     ? "descr"
                                                     : !seen_fortran ? "fortran_order"
                                                                     : "shape"));
        }
    }

private:
    [[noreturn]] void bad(const std::string& what) const { fail(file_, "malformed header: " + what); }
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    void skip_space() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
            ++pos_;
    }
    void expect(char c) {
        if (peek() != c) bad(fmt::format("expected '{}' at byte {}", c, pos_));
        ++pos_;
    }
    // open element (',' element)* [','] close -- a Python dict or tuple literal.
    template <class Element>
    void sequence(char open, char close, const char* what, Element element) {
        expect(open);
        for (;;) {
            skip_space();
            if (peek() == close) break;
            if (pos_ == s_.size()) bad(fmt::format("{} is not closed with '{}'", what, close));
            element();
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != close) bad(fmt::format("expected ',' or '{}' in {}", close, what));
        }
        ++pos_;
    }
    void once(bool& seen, const std::string& key) const {
        if (seen) bad(fmt::format("'{}' appears twice", key));
        seen = true;
    }
    std::string string_literal() {
        const char quote = peek();
        if (quote != '\'' && quote != '"') bad(fmt::format("expected a quoted string at byte {}", pos_));
        const std::size_t end = s_.find(quote, pos_ + 1);
        if (end == std::string_view::npos) bad("unterminated string");
        std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
        pos_ = end + 1;
        return out;
    }
    bool boolean() {
        if (s_.substr(pos_, 4) == "True") {
            pos_ += 4;
            return true;
        }
        if (s_.substr(pos_, 5) == "False") {
            pos_ += 5;
            return false;
        }
        bad("'fortran_order' must be True or False");
    }
    std::vector<std::size_t> tuple() {
        std::vector<std::size_t> dims;
        sequence('(', ')', "the shape", [&] {
            if (peek() < '0' || peek() > '9')
                bad(fmt::format("the shape must be a tuple of non-negative integers (byte {})", pos_));
            std::size_t v = 0;
            while (peek() >= '0' && peek() <= '9') {
                const auto digit = static_cast<std::size_t>(peek() - '0');
                if (v > (std::numeric_limits<std::size_t>::max() - digit) / 10)
                    bad("a dimension of the shape overflows");
                v = v * 10 + digit;
                ++pos_;
            }
            if (peek() == 'L') ++pos_;  // Python 2 long literals, as old numpy wrote them
            dims.push_back(v);
        });
        return dims;
    }

    std::string_view s_;
    const fs::path& file_;
    std::size_t pos_ = 0;
};

std::string dtype_name(char kind, std::size_t size) {
    switch (kind) {
        case 'f':
            return fmt::format("float{}", size * 8);
        case 'i':
            return fmt::format("int{}", size * 8);
        case 'u':
            return fmt::format("uint{}", size * 8);
        case 'c':
            return fmt::format("complex{}", size * 8);
        case 'b':
            return "bool";
        case 'U':
            return "unicode string";
        case 'S':
            return "byte string";
        case 'O':
            return "Python object";
        default:
            return "unknown";
    }
}

struct TypeInfo {
    DType dtype;
    std::size_t size;
    bool swap;  // big-endian in the file
};

TypeInfo parse_descr(const std::string& descr, const fs::path& file) {
    if (descr.size() < 3 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos) {
        fail(file, fmt::format("malformed header: dtype '{}' is not a simple type", descr));
    }
    const char order = descr[0];
    const char kind = descr[1];
    std::size_t size = 0;
    for (std::size_t i = 2; i < descr.size(); ++i) {
        if (descr[i] < '0' || descr[i] > '9' || size > 1000) {
            fail(file, fmt::format("dtype '{}' is not supported: use float32, float64 or bool", descr));
        }
        size = size * 10 + static_cast<std::size_t>(descr[i] - '0');
    }
    TypeInfo t{DType::float32, size, order == '>' && size > 1};
    if (kind == 'f' && size == 4)
        t.dtype = DType::float32;
    else if (kind == 'f' && size == 8)
        t.dtype = DType::float64;
    else if (kind == 'b' && size == 1)
        t.dtype = DType::boolean;
    else {
        fail(file, fmt::format("dtype {} ('{}') is not supported: use float32, float64 or bool", dtype_name(kind, size),
                               descr));
    }
    return t;
}

std::uint32_t little_endian(const std::string& bytes, std::size_t at, std::size_t n) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint32_t(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
    return v;
}

template <class T>
T load(const char* p, bool swap) {
    unsigned char raw[sizeof(T)];
    std::memcpy(raw, p, sizeof(T));
    if (swap) std::reverse(raw, raw + sizeof(T));
    T v;
    std::memcpy(&v, raw, sizeof(T));
    return v;
}

// The multi-index "(0, 3, 1)" of flat C-order position `flat` in `shape`.
std::string index_string(std::size_t flat, const std::vector<std::size_t>& shape) {
    std::vector<std::size_t> idx(shape.size());
    for (std::size_t k = shape.size(); k-- > 0;) {
        idx[k] = flat % shape[k];
        flat /= shape[k];
    }
    return shape_string(idx);
}

// Reorders Fortran-order values (first index fastest) into C order (last index fastest).
std::vector<double> fortran_to_c(const std::vector<double>& f, const std::vector<std::size_t>& shape) {
    const std::size_t rank = shape.size();
    std::vector<std::size_t> f_stride(rank, 1);
    for (std::size_t k = 1; k < rank; ++k) f_stride[k] = f_stride[k - 1] * shape[k - 1];
    std::vector<double> c(f.size());
    std::vector<std::size_t> idx(rank, 0);
    std::size_t offset = 0;  // Fortran offset of the current C-order index
    for (std::size_t flat = 0; flat < c.size(); ++flat) {
        c[flat] = f[offset];
        for (std::size_t k = rank; k-- > 0;) {  // increment the C-order index, last dimension first
            ++idx[k];
            offset += f_stride[k];
            if (idx[k] < shape[k]) break;
            offset -= idx[k] * f_stride[k];
            idx[k] = 0;
        }
    }
    return c;
}

}  // namespace

std::string to_string(DType dtype) {
    static constexpr Named<DType> names[] = {
        {DType::float32, "float32"}, {DType::float64, "float64"}, {DType::boolean, "bool"}};
    return std::string(name_in(names, dtype));
}

std::string shape_string(const std::vector<std::size_t>& shape) {
    if (shape.size() == 1) return fmt::format("({},)", shape[0]);
    return fmt::format("({})", fmt::join(shape, ", "));
}

Array read(const fs::path& file) {
    std::error_code ec;
    const auto status = fs::status(file, ec);
    if (!fs::exists(status)) fail(file, "no such file");
    if (fs::is_directory(status)) fail(file, "is a directory, not a .npy file");
    const auto size = fs::file_size(file, ec);
    if (ec) fail(file, fmt::format("cannot read: {}", ec.message()));
    cli::require_memory(static_cast<std::size_t>(size) * 3, fmt::format("reading {}", file.string()));
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(file, fmt::format("cannot open: {}", std::strerror(errno)));
    std::string bytes(static_cast<std::size_t>(size), '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (in.gcount() != static_cast<std::streamsize>(bytes.size())) fail(file, "cannot read the whole file");
    return parse(bytes, file);
}

namespace {

// A file's header, checked, and where its data lies.
struct Header {
    Array array;  // everything but the values
    TypeInfo type;
    std::size_t count = 0, data_at = 0;
};

// Every check of parse() but the values': `bytes` may be only the start of the file (at least
// its first magic_len + 6 + max_header_len bytes, or all of it), `file_size` is the whole file's.
Header parse_header(std::string_view bytes, std::size_t file_size, const fs::path& file) {
    if (bytes.size() < magic_len + 2 || bytes.substr(0, magic_len) != std::string_view(magic, magic_len)) {
        fail(file, bytes.empty() ? "is empty, not a .npy file" : "not a .npy file (it does not start with \\x93NUMPY)");
    }
    const int major = static_cast<unsigned char>(bytes[magic_len]);
    const int minor = static_cast<unsigned char>(bytes[magic_len + 1]);
    if (major < 1 || major > 3 || minor != 0) {
        fail(file, fmt::format("unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 are read)", major, minor));
    }
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    const std::size_t header_at = magic_len + 2 + len_bytes;
    if (bytes.size() < header_at) fail(file, "truncated inside the header");
    const std::size_t header_len = little_endian(std::string(bytes.substr(0, header_at)), magic_len + 2, len_bytes);
    if (header_len > max_header_len) fail(file, fmt::format("malformed header: claims {} bytes", header_len));
    if (bytes.size() < header_at + header_len) {
        fail(file, fmt::format("truncated inside the header ({} header bytes promised, {} present)", header_len,
                               bytes.size() - header_at));
    }
    const std::string_view header(bytes.data() + header_at, header_len);
    if (header.find('\0') != std::string_view::npos) fail(file, "malformed header: contains a NUL byte");

    Array a;
    a.file = file;
    HeaderParser(header, file).parse(a.descr, a.fortran_order, a.shape);
    const TypeInfo type = parse_descr(a.descr, file);
    a.dtype = type.dtype;

    std::size_t count = 1;
    for (std::size_t d : a.shape) {
        if (d != 0 && count > std::numeric_limits<std::size_t>::max() / type.size / d) {
            fail(file, fmt::format("shape {} is too large", shape_string(a.shape)));
        }
        count *= d;
    }
    const std::size_t data_at = header_at + header_len;
    const std::size_t expected = count * type.size;
    const std::size_t present = file_size - data_at;
    if (present < expected) {
        fail(file, fmt::format("truncated: shape {} of {} needs {} data bytes, the file has {}", shape_string(a.shape),
                               to_string(a.dtype), expected, present));
    }
    if (present > expected) {
        fail(file, fmt::format("{} unexpected bytes after the data of shape {} ({})", present - expected,
                               shape_string(a.shape), to_string(a.dtype)));
    }

    return {std::move(a), type, count, data_at};
}

}  // namespace

Array parse(const std::string& bytes, const fs::path& file) {
    Header h = parse_header(bytes, bytes.size(), file);
    Array a = std::move(h.array);
    const TypeInfo type = h.type;
    const std::size_t count = h.count, data_at = h.data_at;
    a.values.resize(count);
    const char* p = bytes.data() + data_at;
    for (std::size_t i = 0; i < count; ++i, p += type.size) {
        switch (type.dtype) {
            case DType::float32:
                a.values[i] = load<float>(p, type.swap);
                break;
            case DType::float64:
                a.values[i] = load<double>(p, type.swap);
                break;
            case DType::boolean: {
                const auto b = static_cast<unsigned char>(*p);
                if (b > 1)
                    fail(file, fmt::format("bool value {} at {} is neither 0 nor 1", b, index_string(i, a.shape)));
                a.values[i] = b;
                break;
            }
        }
    }
    if (a.fortran_order && a.shape.size() > 1) a.values = fortran_to_c(a.values, a.shape);
    return a;
}

namespace {

// to_tensor's checks on everything but the values: not bool, rank R, no empty dimension.
template <std::size_t R>
typename Tensor<R>::shape_type tensor_shape(const Array& a, const std::string& what) {
    const std::string name = a.file.string();
    if (a.dtype == DType::boolean) {
        throw usage_error(fmt::format("{}: {} must hold float32 or float64 values, the file holds bool", name, what));
    }
    if (a.shape.size() != R) {
        throw usage_error(fmt::format("{}: {} must have {} dimensions, the file has shape {} ({} dimension{})", name,
                                      what, R, shape_string(a.shape), a.shape.size(), a.shape.size() == 1 ? "" : "s"));
    }
    for (std::size_t k = 0; k < R; ++k) {
        if (a.shape[k] == 0) {
            throw usage_error(
                fmt::format("{}: {} has shape {}: dimension {} is empty", name, what, shape_string(a.shape), k));
        }
    }
    typename Tensor<R>::shape_type shape{};
    std::copy(a.shape.begin(), a.shape.end(), shape.begin());
    return shape;
}

}  // namespace

template <std::size_t R>
Tensor<R> to_tensor(const Array& a, const std::string& what) {
    const std::string name = a.file.string();
    const auto shape = tensor_shape<R>(a, what);
    for (std::size_t i = 0; i < a.values.size(); ++i) {
        const double v = a.values[i];
        const bool too_big =
            a.dtype == DType::float64 && std::isfinite(v) && std::abs(v) > std::numeric_limits<float>::max();
        if (!std::isfinite(v) || too_big) {
            throw usage_error(fmt::format("{}: {} has {} at {}: {}", name, what, v, index_string(i, a.shape),
                                          too_big ? "too large for float32" : "inputs must be finite"));
        }
    }
    Tensor<R> t = Tensor<R>::from_shape(shape);
    std::transform(a.values.begin(), a.values.end(), t.begin(), [](double v) { return static_cast<float>(v); });
    return t;
}

template <std::size_t R>
Tensor<R> read_tensor(const fs::path& file, const std::string& what) {
    std::error_code ec;
    const auto status = fs::status(file, ec);
    if (!fs::exists(status)) fail(file, "no such file");
    if (fs::is_directory(status)) fail(file, "is a directory, not a .npy file");
    const auto size = static_cast<std::size_t>(fs::file_size(file, ec));
    if (ec) fail(file, fmt::format("cannot read: {}", ec.message()));
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(file, fmt::format("cannot open: {}", std::strerror(errno)));
    // The header is in the first 64 KiB of any file numpy writes; a longer one takes the long way.
    std::string head(std::min<std::size_t>(size, 64 << 10), '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    if (in.gcount() != static_cast<std::streamsize>(head.size())) fail(file, "cannot read the whole file");
    std::optional<Header> parsed;
    try {
        parsed = parse_header(head, size, file);
    } catch (const usage_error&) {
        if (head.size() == size) throw;  // the whole file was there: the message is the real one
    }
    if (!parsed) return to_tensor<R>(read(file), what);
    const Header& h = *parsed;
    if (h.type.dtype != DType::float32 || h.type.swap || (h.array.fortran_order && h.array.shape.size() > 1)) {
        return to_tensor<R>(read(file), what);  // converted through read() and to_tensor()
    }
    // Little-endian float32 in C order: the file's bytes are the tensor's, read straight into it.
    const auto shape = tensor_shape<R>(h.array, what);
    cli::require_memory(size, fmt::format("reading {}", file.string()));
    Tensor<R> t = Tensor<R>::from_shape(shape);
    prefer_huge_pages(t.data(), h.count * sizeof(float));  // fewer faults while the file is read in
    in.clear();
    in.seekg(static_cast<std::streamoff>(h.data_at));
    in.read(reinterpret_cast<char*>(t.data()), static_cast<std::streamsize>(h.count * sizeof(float)));
    if (in.gcount() != static_cast<std::streamsize>(h.count * sizeof(float))) fail(file, "cannot read the whole file");
    if (!cli::all_finite(t.data(), h.count)) {  // the index is looked for only on failure
        for (std::size_t i = 0; i < h.count; ++i) {
            if (!std::isfinite(t.data()[i])) {
                throw usage_error(fmt::format("{}: {} has {} at {}: inputs must be finite", file.string(), what,
                                              double(t.data()[i]), index_string(i, h.array.shape)));
            }
        }
    }
    return t;
}

template Tensor<1> read_tensor<1>(const fs::path&, const std::string&);
template Tensor<2> read_tensor<2>(const fs::path&, const std::string&);
template Tensor<3> read_tensor<3>(const fs::path&, const std::string&);

template Tensor<1> to_tensor<1>(const Array&, const std::string&);
template Tensor<2> to_tensor<2>(const Array&, const std::string&);
template Tensor<3> to_tensor<3>(const Array&, const std::string&);
template Tensor<4> to_tensor<4>(const Array&, const std::string&);

Mask2 to_mask(const Array& a, const std::string& what) {
    const std::string name = a.file.string();
    if (a.dtype != DType::boolean) {
        throw usage_error(fmt::format("{}: {} must be a bool array (True = ignore), the file holds {}", name, what,
                                      to_string(a.dtype)));
    }
    if (a.shape.size() != 2) {
        throw usage_error(
            fmt::format("{}: {} must have 2 dimensions, the file has shape {}", name, what, shape_string(a.shape)));
    }
    Mask2 m = Mask2::from_shape({a.shape[0], a.shape[1]});
    std::transform(a.values.begin(), a.values.end(), m.begin(), [](double v) { return v != 0.0; });
    return m;
}

std::string encode_header(const std::vector<std::size_t>& shape) {
    // Version 1.0: magic, header length, the header dict padded with spaces (and a final '\n') so
    // the data starts at a multiple of 64 bytes; the floats follow as they are in memory
    // (little-endian, C order).
    static_assert(std::endian::native == std::endian::little);
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
    for (std::size_t k = 0; k < shape.size(); ++k)
        dict += std::to_string(shape[k]) + (shape.size() == 1 || k + 1 < shape.size() ? ", " : "");
    if (shape.size() == 1) dict.resize(dict.size() - 1);  // (n,) for one dimension
    dict += "), }";
    const std::size_t unpadded = 10 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(dict.size() & 0xff);
    out += static_cast<char>(dict.size() >> 8);
    return out + dict;
}

template <std::size_t R>
std::string encode(const Tensor<R>& t) {
    std::string out = encode_header(std::vector<std::size_t>(t.shape().begin(), t.shape().end()));
    out.append(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(float));
    return out;
}

template std::string encode<1>(const Tensor<1>&);
template std::string encode<2>(const Tensor<2>&);
template std::string encode<3>(const Tensor<3>&);
template std::string encode<4>(const Tensor<4>&);

PendingFile::PendingFile(const fs::path& target, const std::string& bytes)
    : PendingFile(target, std::vector<std::string_view>{bytes}) {}

PendingFile::PendingFile(const fs::path& target, const std::vector<std::string_view>& pieces) : target_(target) {
    static std::atomic<unsigned> counter{0};
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    if (fs::is_directory(target, ec)) fail(target, "is a directory");
    if (!fs::is_directory(dir, ec))
        fail(target, fmt::format("cannot write: the directory {} does not exist", dir.string()));
    temp_ = dir / fmt::format(".{}.tmp-{}-{}", target.filename().string(), getpid(), counter++);
    const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        const std::string why = std::strerror(errno);
        temp_.clear();
        fail(target, fmt::format("cannot write: {}", why));
    }
    // A throwing constructor runs no destructor: remove the temporary file here on failure.
    auto give_up = [&](const std::string& why) {
        std::error_code ignored;
        fs::remove(temp_, ignored);
        temp_.clear();
        fail(target, fmt::format("cannot write: {}", why));
    };
    for (const std::string_view bytes : pieces) {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                const std::string why = n < 0 ? std::strerror(errno) : "short write";
                ::close(fd);
                give_up(why);
            }
            done += static_cast<std::size_t>(n);
        }
    }
    if (::close(fd) != 0) give_up(std::strerror(errno));
}

PendingFile::PendingFile(PendingFile&& other) noexcept
    : target_(std::move(other.target_)), temp_(std::move(other.temp_)) {
    other.temp_.clear();
}

PendingFile::~PendingFile() {
    if (!temp_.empty()) {
        std::error_code ec;
        fs::remove(temp_, ec);
    }
}

// Over an existing file, the two names are exchanged (one atomic step: the target holds the old
// bytes or the new, never neither) and the old bytes, now under the temporary name, removed. A
// plain rename over an existing file makes ext4 write the new file's data out at once
// (auto_da_alloc), a noticeable share of a one-shot command such as `attend --grads`.
void PendingFile::commit() {
    if (temp_.empty()) return;
    std::error_code ec;
    if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
        fs::remove(temp_, ec);  // the old bytes; a failure leaves a stray temporary file, not a wrong target
    } else {
        fs::rename(temp_, target_, ec);  // no file there yet, or a file system without exchange
        if (ec) fail(target_, fmt::format("cannot write: {}", ec.message()));
    }
    temp_.clear();
}

}  // namespace headwise::npy
