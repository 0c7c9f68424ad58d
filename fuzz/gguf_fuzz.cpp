// Fuzz target: the GGUF reader must answer any bytes with a File or a usage_error -- never a
// crash, a hang, an over-allocation or undefined behaviour (ASan + UBSan are on in this build).
// Whatever parses is read back as the decoder would: every metadata value through its getter,
// every tensor's first and last byte, and its first and last rows dequantized.
#include "headwise/model/gguf.hpp"
#include "headwise/model/quant.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace headwise;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const auto f = gguf::File::parse(bytes, "fuzz.gguf");
        for (const auto& e : f.metadata()) {
            for (int getter = 0; getter < 6; ++getter) {
                try {
                    switch (getter) {
                        case 0:
                            (void)f.get_uint(e.key);
                            break;
                        case 1:
                            (void)f.get_float(e.key);
                            break;
                        case 2:
                            (void)f.get_bool(e.key);
                            break;
                        case 3:
                            (void)f.get_string(e.key);
                            break;
                        case 4:
                            (void)f.get_strings(e.key);
                            break;
                        default:
                            (void)f.get_ints(e.key);
                            break;
                    }
                } catch (const usage_error&) {}
            }
        }
        std::vector<float> row;
        for (const auto& t : f.tensors()) {
            volatile std::byte first = t.data[0], last = t.data[t.bytes - 1];
            (void)first;
            (void)last;
            (void)&f.tensor(t.name);
            row.resize(t.columns());
            quant::dequantize_row(t.type, t.row(0), row.data(), row.size());
            quant::dequantize_row(t.type, t.row(t.rows() - 1), row.data(), row.size());
        }
    } catch (const usage_error&) {}
    return 0;
}
