#include "headwise/model/safetensors.hpp"

#include "headwise/model/json_object.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

namespace headwise::safetensors {

namespace {

// A header larger than this is not a weight file's header (the 91 MB lesson model's is 9 KB).
constexpr std::size_t max_header = 100u << 20;

struct Known {
    std::string_view name;
    DType dtype;
    std::size_t size;
};
constexpr Known known[] = {{"F64", DType::f64, 8},     {"F32", DType::f32, 4}, {"F16", DType::f16, 2},
                           {"BF16", DType::bf16, 2},   {"I64", DType::i64, 8}, {"I32", DType::i32, 4},
                           {"I16", DType::i16, 2},     {"I8", DType::i8, 1},   {"U8", DType::u8, 1},
                           {"BOOL", DType::boolean, 1}};

std::string shape_text(const std::vector<std::size_t>& shape) { return fmt::format("({})", fmt::join(shape, ", ")); }

}  // namespace

std::string_view to_string(DType dtype) {
    for (const Known& k : known)
        if (k.dtype == dtype) return k.name;
    return "?";
}

std::size_t element_size(DType dtype) {
    for (const Known& k : known)
        if (k.dtype == dtype) return k.size;
    return 0;
}

std::size_t TensorInfo::count() const {
    std::size_t n = 1;
    for (std::size_t s : shape) n *= s;  // checked against overflow when the header was read
    return n;
}

File::File(std::shared_ptr<const model::FileBytes> storage, std::filesystem::path path)
    : storage_(std::move(storage)), path_(std::move(path)) {
    index();
}

File File::open(const std::filesystem::path& path) { return File(model::FileBytes::map(path), path); }

File File::parse(std::string bytes, const std::filesystem::path& label) {
    return File(model::FileBytes::hold(std::move(bytes)), label);
}

void File::index() {
    const std::string file = path_.string();
    const std::byte* base = storage_->data();
    const std::size_t size = storage_->size();
    if (size < 8)
        throw usage_error(
            fmt::format("{}: too short for a safetensors file ({} bytes, the header length alone is 8)", file, size));
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(base[i]);  // little-endian
    if (n > size - 8) {
        throw usage_error(
            fmt::format("{}: the header claims {} bytes but the file has only {} after the length "
                        "(truncated, or not a safetensors file)",
                        file, n, size - 8));
    }
    if (n > max_header) throw usage_error(fmt::format("{}: a header of {} bytes is not plausible", file, n));
    const std::string_view text(reinterpret_cast<const char*>(base + 8), static_cast<std::size_t>(n));
    const nlohmann::json header = parse_json_object(text, file, "the header");
    data_ = base + 8 + n;
    data_size_ = size - 8 - static_cast<std::size_t>(n);

    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) throw usage_error(fmt::format("{}: __metadata__ is not an object", file));
            for (const auto& [key, value] : entry.items()) {
                if (!value.is_string())
                    throw usage_error(fmt::format("{}: __metadata__[\"{}\"] is not a string", file, key));
                metadata_[key] = value.get<std::string>();
            }
            continue;
        }
        const std::string tensor_name = name;  // a copy: clang 14 lambdas cannot capture structured bindings
        auto bad = [&](std::string_view why) {
            return usage_error(fmt::format("{}: tensor \"{}\": {}", file, tensor_name, why));
        };
        if (!entry.is_object()) throw bad("its entry is not an object");
        for (const char* key : {"dtype", "shape", "data_offsets"})
            if (!entry.contains(key)) throw bad(fmt::format("no \"{}\"", key));
        TensorInfo t;
        t.name = name;
        const auto& dtype = entry["dtype"];
        if (!dtype.is_string()) throw bad("dtype is not a string");
        const auto* k = std::find_if(std::begin(known), std::end(known),
                                     [&](const Known& x) { return x.name == dtype.get<std::string>(); });
        if (k == std::end(known)) throw bad(fmt::format("unknown dtype \"{}\"", dtype.get<std::string>()));
        t.dtype = k->dtype;
        const auto& shape = entry["shape"];
        if (!shape.is_array() || shape.size() > 16) throw bad("shape is not an array of at most 16 sizes");
        std::size_t bytes = k->size;
        for (const auto& s : shape) {
            if (!s.is_number_unsigned()) throw bad("a shape entry is not a non-negative integer");
            const auto v = s.get<std::uint64_t>();
            if (v != 0 && bytes > std::numeric_limits<std::size_t>::max() / v) throw bad("its shape overflows");
            bytes *= static_cast<std::size_t>(v);
            t.shape.push_back(static_cast<std::size_t>(v));
        }
        const auto& offsets = entry["data_offsets"];
        if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
            !offsets[1].is_number_unsigned())
            throw bad("data_offsets is not [begin, end]");
        const auto begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
        if (begin > end || end > data_size_) {
            throw bad(fmt::format("data_offsets [{}, {}] fall outside the {} bytes of data", begin, end, data_size_));
        }
        if (end - begin != bytes) {
            throw bad(fmt::format("{} {} needs {} bytes but data_offsets [{}, {}] hold {}", to_string(t.dtype),
                                  shape_text(t.shape), bytes, begin, end, end - begin));
        }
        t.begin = static_cast<std::size_t>(begin);
        t.end = static_cast<std::size_t>(end);
        tensors_.push_back(std::move(t));
    }
    std::vector<const TensorInfo*> by_offset;
    for (const TensorInfo& t : tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](auto* a, auto* b) { return a->begin < b->begin || (a->begin == b->begin && a->end < b->end); });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
        if (by_offset[i]->begin < by_offset[i - 1]->end) {
            throw usage_error(fmt::format("{}: tensors \"{}\" and \"{}\" overlap in the data", file,
                                          by_offset[i - 1]->name, by_offset[i]->name));
        }
    }
    std::sort(tensors_.begin(), tensors_.end(),
              [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
}

bool File::contains(std::string_view name) const {
    return std::any_of(tensors_.begin(), tensors_.end(), [&](const TensorInfo& t) { return t.name == name; });
}

const TensorInfo& File::info(std::string_view name) const {
    auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                               [](const TensorInfo& t, std::string_view n) { return t.name < n; });
    if (it == tensors_.end() || it->name != name) {
        throw usage_error(
            fmt::format("{}: no tensor \"{}\" (the file holds {} tensors)", path_.string(), name, tensors_.size()));
    }
    return *it;
}

std::span<const std::byte> File::bytes(std::string_view name) const {
    const TensorInfo& t = info(name);
    return {data_ + t.begin, t.end - t.begin};
}

void File::copy_f32(std::string_view name, const std::vector<std::size_t>& shape, float* out) const {
    const TensorInfo& t = info(name);
    if (t.dtype != DType::f32) {
        throw usage_error(
            fmt::format("{}: tensor \"{}\" is {}, expected F32", path_.string(), name, to_string(t.dtype)));
    }
    if (t.shape != shape) {
        throw usage_error(fmt::format("{}: tensor \"{}\" is {}, expected {}", path_.string(), name, shape_text(t.shape),
                                      shape_text(shape)));
    }
    const std::size_t n = t.count();
    // memcpy, not a cast: the data section need not be 4-byte aligned. Little-endian host assumed.
    if (n != 0) std::memcpy(out, data_ + t.begin, n * sizeof(float));
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(out[i])) {
            throw usage_error(
                fmt::format("{}: tensor \"{}\" holds {} at flat index {}", path_.string(), name, out[i], i));
        }
    }
}

std::vector<float> File::read_f32(std::string_view name, const std::vector<std::size_t>& shape) const {
    std::vector<float> out(info(name).count());
    copy_f32(name, shape, out.data());
    return out;
}

}  // namespace headwise::safetensors
