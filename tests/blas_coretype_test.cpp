// The choice of OpenBLAS kernels (src/headwise/blas_coretype.*), on the cpuid registers of
// several CPUs, and the re-start that applies it, run for real.
#include "headwise/fast/blas_coretype.hpp"

#include <catch2/catch.hpp>

#include <cblas.h>

#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

using namespace headwise::blas;

namespace {

constexpr std::uint32_t intel_ebx = 0x756e6547, intel_edx = 0x49656e69, intel_ecx = 0x6c65746e;  // "GenuineIntel"
constexpr std::uint32_t amd_ebx = 0x68747541, amd_edx = 0x69746e65, amd_ecx = 0x444d4163;        // "AuthenticAMD"

CpuidRecord intel(std::uint32_t max_leaf, std::uint32_t eax, std::uint32_t ecx, std::uint32_t edx, std::uint32_t l7_ebx,
                  std::uint32_t l7_ecx, std::uint32_t l7_edx, std::uint32_t xcr0) {
    return {intel_ebx, intel_edx, intel_ecx, max_leaf, eax, ecx, edx, l7_ebx, l7_ecx, l7_edx, xcr0};
}
CpuidRecord amd(std::uint32_t max_leaf, std::uint32_t eax, std::uint32_t ecx, std::uint32_t edx, std::uint32_t l7_ebx,
                std::uint32_t l7_ecx, std::uint32_t l7_edx, std::uint32_t xcr0) {
    return {amd_ebx, amd_edx, amd_ecx, max_leaf, eax, ecx, edx, l7_ebx, l7_ecx, l7_edx, xcr0};
}

// The machine this project first ran on, read with cpuid/xgetbv: a virtual "Intel Xeon
// Processor", family 6 model 167, with AVX-512, AMX and AVX-512 BF16 (Sapphire-Rapids-class
// flags). OpenBLAS 0.3.21 knows model 167 and picks SkylakeX by itself.
const CpuidRecord xeon_model_167 =
    intel(36, 0x000a0671, 0xfffa3203, 0x1f8bfbff, 0xf1bf2ffb, 0x1a415f46, 0x23c14010, 0x600e7);
// A newer Xeon: family 6 model 207 (0xCF, Emerald Rapids), same feature flags. Not in
// OpenBLAS 0.3.21's table: it falls back to Prescott.
const CpuidRecord xeon_model_207 =
    intel(31, 0x000c06f2, 0xfffa3203, 0x1f8bfbff, 0xf1bf2ffb, 0x1a415f46, 0x23c14010, 0x602e7);
// AMD EPYC 9004 (Zen 4, family 0x19 model 0x11): AVX-512 F/CD/DQ/BW/VL, OS saves ZMM and PKRU.
const CpuidRecord epyc_zen4 = amd(16, 0x00a10f11, 0x7ef8320b, 0x178bfbff, 0xf1bf97a9, 0x005ceffe, 0x10, 0x2e7);
// The machine it runs on since, read with cpuid/xgetbv: a virtual AMD EPYC of family 26 (0x1A,
// Zen 5) model 2, with AVX-512 (BF16, VNNI, VP2INTERSECT too). OpenBLAS 0.3.21 does not know
// family 26 by model and picks Cooperlake from its features: AVX-512 kernels, nothing to force.
const CpuidRecord epyc_zen5 = amd(28, 0x00b00f21, 0xfffa3203, 0x178bfbff, 0xf1bf07ab, 0x00405fc6, 0x110, 0xe7);
// AMD EPYC 7002 (Zen 2, family 0x17 model 0x31) and 7003 (Zen 3, family 0x19 model 0x01): AVX2 + FMA.
const CpuidRecord epyc_zen2 = amd(16, 0x00830f10, 0x7ed8320b, 0x178bfbff, 0x219c91a9, 0x00400004, 0, 0x7);
const CpuidRecord epyc_zen3 = amd(16, 0x00a00f11, 0x7ef8320b, 0x178bfbff, 0x219c97a9, 0x0040069c, 0x10, 0x207);
// Xeon E5 v3 (Haswell, family 6 model 63): AVX2 + FMA, no AVX-512.
const CpuidRecord haswell = intel(15, 0x000306f2, 0x7ffefbff, 0xbfebfbff, 0x000037ab, 0, 0x9c000000, 0x7);
// Core 2 Duo E8400 (Penryn, family 6 model 23): SSE up to SSE4.1, XSAVE present but not enabled.
const CpuidRecord core2 = intel(13, 0x0001067a, 0x0408e3fd, 0xbfebfbff, 0, 0, 0, 0);

}  // namespace

// First in this file: no test before it has made a multi-threaded BLAS call.
TEST_CASE("blas threads: OpenBLAS's idle worker threads are stopped before main, and come back when a call needs them",
          "[blas]") {
    const auto threads = [] {
        return std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                             std::filesystem::directory_iterator{});
    };
    CHECK(threads() == 1);  // OpenBLAS started one worker per extra core; none is left spinning
    // A call big enough for OpenBLAS to split still gets the right answer on its restarted threads.
    const int n = 512;
    std::vector<float> a(n * n, 1.0f), b(n * n, 2.0f), c(n * n, 0.0f);
    openblas_set_num_threads(2);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    CHECK(c.front() == 2.0f * n);
    CHECK(c.back() == 2.0f * n);
}

TEST_CASE("blas coretype: family and model come out of leaf 1 with the extended fields", "[blas]") {
    CHECK(decode(xeon_model_207).family == 6);
    CHECK(decode(xeon_model_207).model == 207);
    CHECK(decode(xeon_model_167).model == 167);
    CHECK(decode(epyc_zen4).family == 0x19);
    CHECK(decode(epyc_zen4).model == 0x11);
    CHECK(decode(epyc_zen5).family == 0x1a);
    CHECK(decode(epyc_zen5).model == 0x02);
    CHECK(decode(epyc_zen2).family == 0x17);
    CHECK(decode(core2).model == 23);
    CHECK(decode(haswell).vendor == "GenuineIntel");
    CHECK(decode(epyc_zen3).vendor == "AuthenticAMD");
}

TEST_CASE("blas coretype: the widest kernels each CPU can run", "[blas]") {
    CHECK(best_coretype(decode(xeon_model_167)) == "SkylakeX");
    CHECK(best_coretype(decode(xeon_model_207)) == "SkylakeX");
    CHECK(best_coretype(decode(epyc_zen4)) == "SkylakeX");
    CHECK(best_coretype(decode(epyc_zen5)) == "SkylakeX");
    CHECK(best_coretype(decode(epyc_zen3)) == "Zen");
    CHECK(best_coretype(decode(epyc_zen2)) == "Zen");
    CHECK(best_coretype(decode(haswell)) == "Haswell");
    CHECK(best_coretype(decode(core2)) == "Core2");
}

TEST_CASE("blas coretype: AVX-512 and AVX count only when the OS saves their registers", "[blas]") {
    CpuidRecord no_zmm = xeon_model_167;
    no_zmm.xcr0 = 0x7;  // x87, SSE, AVX state only (e.g. a kernel booted without AVX-512 support)
    CHECK_FALSE(decode(no_zmm).avx512);
    CHECK(best_coretype(decode(no_zmm)) == "Haswell");
    CpuidRecord no_osxsave = haswell;
    no_osxsave.leaf1_ecx &= ~(1u << 27);
    no_osxsave.xcr0 = 0;
    CHECK_FALSE(decode(no_osxsave).avx);
    CHECK(best_coretype(decode(no_osxsave)) == "Nehalem");
}

TEST_CASE("blas coretype: forced only when OpenBLAS picked narrower kernels and nobody set one", "[blas]") {
    // Issue 19's Xeon: OpenBLAS 0.3.21 falls back to Prescott, headwise re-starts with SkylakeX.
    CHECK(coretype_to_force(decode(xeon_model_207), "Prescott", nullptr) == "SkylakeX");
    // The user's OPENBLAS_CORETYPE always stands, even a slow one.
    CHECK(coretype_to_force(decode(xeon_model_207), "Prescott", "Prescott").empty());
    CHECK(coretype_to_force(decode(xeon_model_207), "Haswell", "Haswell").empty());
    // OpenBLAS got it right: nothing to do.
    CHECK(coretype_to_force(decode(xeon_model_167), "SkylakeX", nullptr).empty());
    CHECK(coretype_to_force(decode(xeon_model_167), "Cooperlake", nullptr).empty());
    CHECK(coretype_to_force(decode(epyc_zen3), "Zen", nullptr).empty());
    CHECK(coretype_to_force(decode(epyc_zen2), "Zen", nullptr).empty());
    CHECK(coretype_to_force(decode(haswell), "Haswell", nullptr).empty());
    CHECK(coretype_to_force(decode(core2), "Penryn", nullptr).empty());
    // Zen 5: OpenBLAS 0.3.21's own pick (Cooperlake) is AVX-512 already; an OPENBLAS_CORETYPE set
    // in the environment (Haswell, on this project's development machines) stands; had OpenBLAS
    // fallen back by itself, headwise would re-start with SkylakeX.
    CHECK(coretype_to_force(decode(epyc_zen5), "Cooperlake", nullptr).empty());
    CHECK(coretype_to_force(decode(epyc_zen5), "Haswell", "Haswell").empty());
    CHECK(coretype_to_force(decode(epyc_zen5), "Haswell", nullptr) == "SkylakeX");
    CHECK(coretype_to_force(decode(epyc_zen5), "Prescott", nullptr) == "SkylakeX");
    // Zen 4 runs AVX-512; OpenBLAS 0.3.21 gives it the AVX2 Zen kernels.
    CHECK(coretype_to_force(decode(epyc_zen4), "Zen", nullptr) == "SkylakeX");
    // Any AVX2 CPU that OpenBLAS does not know gets AVX2 kernels, not SSE ones.
    CHECK(coretype_to_force(decode(haswell), "Prescott", nullptr) == "Haswell");
    CHECK(coretype_to_force(decode(epyc_zen2), "Prescott", nullptr) == "Zen");
    // A core name this table does not know comes from a newer OpenBLAS: trust it.
    CHECK(coretype_to_force(decode(xeon_model_207), "SapphireRapidsNext", nullptr).empty());
}

TEST_CASE("blas coretype: kernel levels of OpenBLAS's core names", "[blas]") {
    CHECK(generic_kernels("Prescott"));
    CHECK(generic_kernels("prescott"));
    CHECK(generic_kernels("Nehalem"));
    CHECK_FALSE(generic_kernels("Haswell"));
    CHECK_FALSE(generic_kernels("SkylakeX"));
    CHECK(kernel_level("SandyBridge") < kernel_level("Haswell"));
    CHECK(kernel_level("Zen") == kernel_level("Haswell"));
    CHECK(kernel_level("Haswell") < kernel_level("SkylakeX"));
    CHECK(kernel_level("NoSuchCore") == 0);
}

TEST_CASE("blas coretype: this process runs the widest kernels its CPU allows", "[blas]") {
    const KernelReport k = kernel_report();
    INFO(k.corename << " (" << k.source << "), " << k.config);
    CHECK(k.corename == openblas_get_corename());
    if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
        CHECK(k.warning.empty());
        CHECK(kernel_level(k.corename) >= kernel_level(best_coretype(decode(read_cpuid()))));
    }
}

// Run by ctest with HEADWISE_BLAS_ASSUME_DETECTED=Prescott (tests/CMakeLists.txt): OpenBLAS is
// made to look as if it had fallen back to its generic kernels, and by the time Catch2 runs,
// the program has been started again with OPENBLAS_CORETYPE set to the CPU's best.
TEST_CASE("blas coretype: a generic pick is replaced by re-starting the program", "[.restart]") {
    const std::string best = best_coretype(decode(read_cpuid()));
    const KernelReport k = kernel_report();
    INFO(k.corename << " (" << k.source << ")");
    if (kernel_level(best) > 1) {
        REQUIRE(std::getenv("OPENBLAS_CORETYPE") != nullptr);
        CHECK(std::string(std::getenv("OPENBLAS_CORETYPE")) == best);
        CHECK(std::string(std::getenv("HEADWISE_BLAS_DETECTED")) == "Prescott");
        CHECK(kernel_level(openblas_get_corename()) == kernel_level(best));
        CHECK(k.source.find("chosen by headwise") != std::string::npos);
        CHECK(k.warning.empty());
    } else {  // an SSE-only CPU: Prescott is as good as it gets, nothing to re-start for
        CHECK(std::getenv("HEADWISE_BLAS_DETECTED") == nullptr);
    }
}

// Run by ctest with OPENBLAS_CORETYPE=Prescott: a user's choice is kept, and the report warns.
TEST_CASE("blas coretype: generic kernels set by the user are kept and reported", "[.generic]") {
    const KernelReport k = kernel_report();
    CHECK(k.corename == "Prescott");
    CHECK(k.generic);
    CHECK(k.source == "set by OPENBLAS_CORETYPE=Prescott");
    CHECK(k.warning.empty() == (kernel_level(best_coretype(decode(read_cpuid()))) == 1));
}
