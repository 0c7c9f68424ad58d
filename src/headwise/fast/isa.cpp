#include "headwise/fast/isa.hpp"

#include "headwise/base/names.hpp"
#include "headwise/base/tensor.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace headwise {

namespace {
constexpr Named<Isa> isa_names[] = {{Isa::scalar, "scalar"}, {Isa::avx2, "avx2"}, {Isa::avx512, "avx512"}};
}  // namespace

std::string_view to_string(Isa isa) { return name_in(isa_names, isa); }

Isa parse_isa(std::string_view name) {
    if (const std::optional<Isa> isa = value_named(isa_names, name)) return *isa;
    throw usage_error(
        fmt::format("HEADWISE_ISA={}: not an instruction set headwise knows (scalar, avx2, avx512)", name));
}

std::optional<Isa> isa_from_environment() {
    // A static's initialiser runs again after it throws: a bad name is refused on every call.
    static const std::optional<Isa> asked = []() -> std::optional<Isa> {
        const char* name = std::getenv("HEADWISE_ISA");
        if (name == nullptr || *name == '\0') return std::nullopt;
        return parse_isa(name);
    }();
    return asked;
}

Isa isa_within(Isa widest, std::optional<Isa> asked) {
    if (!asked) return widest;
    if (*asked > widest)
        throw usage_error(fmt::format("HEADWISE_ISA={}: this CPU has no {} (it has {})", to_string(*asked),
                                      to_string(*asked), to_string(widest)));
    return *asked;
}

namespace fast {

Isa widest_fast_isa() {
    static const Isa widest = [] {
        if (__builtin_cpu_supports("avx512f")) return Isa::avx512;
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
        return Isa::scalar;
    }();
    return widest;
}

Isa fast_isa() {
    static const Isa isa = isa_within(widest_fast_isa(), isa_from_environment());
    return isa;
}

}  // namespace fast

}  // namespace headwise
