// Fuzz target: the safetensors reader must answer any bytes with a File or a usage_error -- never
// a crash, a hang, an over-allocation or undefined behaviour (ASan + UBSan are on in this build).
// Whatever parses is read back, every tensor, as the BERT loader would.
#include "headwise/model/safetensors.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const auto f = headwise::safetensors::File::parse(bytes, "fuzz.safetensors");
        for (const auto& t : f.tensors()) {
            (void)f.bytes(t.name);
            try {
                (void)f.read_f32(t.name, t.shape);
            } catch (const headwise::usage_error&) {}
        }
    } catch (const headwise::usage_error&) {}
    return 0;
}
