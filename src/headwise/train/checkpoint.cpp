#include "headwise/train/checkpoint.hpp"

#include "headwise/io/npy.hpp"
#include "headwise/model/safetensors.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>

namespace headwise::train {

namespace {

// The safetensors header: its metadata, then each tensor's dtype, shape and byte range in the data.
std::string header(const Params& params, const std::map<std::string, std::string>& metadata) {
    nlohmann::json h;
    h["__metadata__"] = metadata;
    for (const ParamInfo& p : params.layout.params) {
        const std::size_t begin = p.offset * sizeof(float), end = begin + p.count() * sizeof(float);
        h[p.name] = {{"dtype", "F32"}, {"shape", p.shape}, {"data_offsets", {begin, end}}};
    }
    std::string text = h.dump();
    while (text.size() % 8 != 0) text += ' ';  // the data starts 8-byte aligned
    return text;
}

std::size_t metadata_size(const safetensors::File& file, const std::string& key) {
    const auto it = file.metadata().find(key);
    if (it == file.metadata().end())
        throw usage_error(fmt::format("{}: no '{}' in the checkpoint's metadata", file.path().string(), key));
    try {
        std::size_t used = 0;
        const unsigned long long v = std::stoull(it->second, &used);
        if (used == it->second.size()) return std::size_t(v);
    } catch (const std::exception&) {}
    throw usage_error(
        fmt::format("{}: metadata '{}' is '{}', not a whole number", file.path().string(), key, it->second));
}

}  // namespace

void check_writable(const std::filesystem::path& path) {
    npy::PendingFile probe(path, std::string());  // removed again when it goes out of scope
}

void save_checkpoint(const std::filesystem::path& path, const Params& params,
                     const std::map<std::string, std::string>& extra_metadata) {
    const Config& c = params.config;
    std::map<std::string, std::string> metadata = extra_metadata;
    metadata["heads"] = std::to_string(c.heads);
    metadata["layers"] = std::to_string(c.layers);
    metadata["vocab"] = std::to_string(c.vocab);
    metadata["context"] = std::to_string(c.context);
    metadata["d_model"] = std::to_string(c.d_model);
    const std::string h = header(params, metadata);
    char length[8];  // the header's size, 64-bit little-endian
    for (int i = 0; i < 8; ++i) length[i] = static_cast<char>(std::uint64_t(h.size()) >> (8 * i));
    npy::PendingFile file(
        path, {std::string_view(length, 8),
               h,
               {reinterpret_cast<const char*>(params.values.data()), params.values.size() * sizeof(float)}});
    file.commit();
}

Params load_checkpoint(const std::filesystem::path& path) {
    const safetensors::File file = safetensors::File::open(path);
    Config c;
    c.heads = metadata_size(file, "heads");
    c.layers = metadata_size(file, "layers");
    c.vocab = metadata_size(file, "vocab");
    c.context = metadata_size(file, "context");
    c.d_model = file.contains("embed.weight") && file.info("embed.weight").shape.size() == 2
                    ? file.info("embed.weight").shape[1]
                    : 0;
    try {
        check(c);
    } catch (const usage_error& e) {
        throw usage_error(fmt::format("{}: {}", path.string(), e.what()));
    }
    Params p(c);
    for (const ParamInfo& info : p.layout.params) {
        const std::vector<float> v = file.read_f32(info.name, info.shape);
        std::copy(v.begin(), v.end(), p.values.begin() + std::ptrdiff_t(info.offset));
    }
    return p;
}

}  // namespace headwise::train
