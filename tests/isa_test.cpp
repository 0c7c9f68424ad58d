// HEADWISE_ISA: the one parser the attention's kernels and the decoder's products share.
// tests/CMakeLists.txt runs this test, and the fused attention's, again with HEADWISE_ISA=avx2.
#include "headwise/fast/isa.hpp"
#include "headwise/base/tensor.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

using namespace headwise;

TEST_CASE("isa: the three names headwise knows, and one clear line for any other", "[isa]") {
    CHECK(parse_isa("scalar") == Isa::scalar);
    CHECK(parse_isa("avx2") == Isa::avx2);
    CHECK(parse_isa("avx512") == Isa::avx512);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) CHECK(parse_isa(to_string(isa)) == isa);
    for (const char* bad : {"", "AVX2", "avx-512", "sse4", "avx2 "}) {
        INFO("HEADWISE_ISA='" << bad << "'");
        CHECK_THROWS_AS(parse_isa(bad), usage_error);
    }
    CHECK_THROWS_WITH(parse_isa("sse4"),
                      "HEADWISE_ISA=sse4: not an instruction set headwise knows (scalar, avx2, avx512)");
}

TEST_CASE("isa: a narrower set may be asked for, a wider one than the CPU has is refused", "[isa]") {
    CHECK(isa_within(Isa::avx512, std::nullopt) == Isa::avx512);
    CHECK(isa_within(Isa::avx512, Isa::avx2) == Isa::avx2);
    CHECK(isa_within(Isa::avx512, Isa::scalar) == Isa::scalar);
    CHECK(isa_within(Isa::avx2, Isa::avx2) == Isa::avx2);
    CHECK_THROWS_WITH(isa_within(Isa::avx2, Isa::avx512), "HEADWISE_ISA=avx512: this CPU has no avx512 (it has avx2)");
    CHECK_THROWS_AS(isa_within(Isa::scalar, Isa::avx2), usage_error);
}

namespace {

// The CPU's widest set as the issue defines it, asked of the compiler's runtime here, not of isa.cpp.
Isa widest_here() {
    if (__builtin_cpu_supports("avx512f")) return Isa::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
    return Isa::scalar;
}

}  // namespace

TEST_CASE("isa: the fast path runs the CPU's widest set, or the one HEADWISE_ISA names", "[isa]") {
    CHECK(fast::widest_fast_isa() == widest_here());
    const char* asked = std::getenv("HEADWISE_ISA");
    const std::string name = asked != nullptr ? asked : "";
    if (name.empty()) {
        CHECK(!isa_from_environment().has_value());
        CHECK(fast::fast_isa() == widest_here());
    } else {  // ctest's run with HEADWISE_ISA=avx2
        CHECK(to_string(fast::fast_isa()) == name);
        CHECK(isa_from_environment() == fast::fast_isa());
    }
}
