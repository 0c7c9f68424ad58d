// Fuzz target: the .npy reader must answer any bytes with a value or a usage_error -- never a
// crash, a hang, an over-allocation or undefined behaviour (ASan + UBSan are on in this build).
#include "headwise/io/npy.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const auto a = headwise::npy::parse(bytes, "fuzz.npy");
        // Whatever parsed must also convert, or be refused, cleanly.
        try {
            (void)headwise::npy::to_tensor<3>(a, "--query");
        } catch (const headwise::usage_error&) {}
        try {
            (void)headwise::npy::to_mask(a, "--key-padding-mask");
        } catch (const headwise::usage_error&) {}
    } catch (const headwise::usage_error&) {}
    return 0;
}
