#include "headwise/fast/blas_coretype.hpp"

#include "headwise/fast/isa.hpp"

#include <cblas.h>
#include <cpuid.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace headwise::blas {

namespace {

constexpr bool bit(std::uint32_t reg, unsigned n) { return ((reg >> n) & 1u) != 0; }

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

// Environment variables between the two runs of a program that headwise re-started.
constexpr const char* detected_var = "HEADWISE_BLAS_DETECTED";  // OpenBLAS's own pick, for the report
// Test hook: act as if OpenBLAS had picked this core (to exercise the re-start on any machine).
constexpr const char* assume_var = "HEADWISE_BLAS_ASSUME_DETECTED";

}  // namespace

CpuidRecord read_cpuid() {
    CpuidRecord r;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0, &a, &b, &c, &d) == 0) return r;
    r.max_leaf = a;
    r.leaf0_ebx = b;
    r.leaf0_edx = d;
    r.leaf0_ecx = c;
    __cpuid(1, a, b, c, d);
    r.leaf1_eax = a;
    r.leaf1_ecx = c;
    r.leaf1_edx = d;
    if (r.max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        r.leaf7_ebx = b;
        r.leaf7_ecx = c;
        r.leaf7_edx = d;
    }
    if (bit(r.leaf1_ecx, 27)) {  // OSXSAVE: XGETBV may be executed
        std::uint32_t lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        r.xcr0 = lo;
    }
    return r;
}

CpuFeatures decode(const CpuidRecord& r) {
    CpuFeatures f;
    char vendor[13] = {};
    std::memcpy(vendor, &r.leaf0_ebx, 4);
    std::memcpy(vendor + 4, &r.leaf0_edx, 4);
    std::memcpy(vendor + 8, &r.leaf0_ecx, 4);
    f.vendor = vendor;
    const unsigned base_family = (r.leaf1_eax >> 8) & 0xf, base_model = (r.leaf1_eax >> 4) & 0xf;
    f.family = base_family == 0xf ? base_family + ((r.leaf1_eax >> 20) & 0xff) : base_family;
    f.model = base_family == 0x6 || base_family == 0xf ? base_model | (((r.leaf1_eax >> 16) & 0xf) << 4) : base_model;

    f.sse3 = bit(r.leaf1_ecx, 0);
    f.ssse3 = bit(r.leaf1_ecx, 9);
    f.sse4_2 = bit(r.leaf1_ecx, 20);
    // AVX needs the CPU's flag and the OS's promise to save XMM and YMM (XCR0 bits 1 and 2);
    // AVX-512 also needs the opmask and both halves of the ZMM registers (bits 5, 6 and 7).
    const bool os_ymm = bit(r.leaf1_ecx, 27) && (r.xcr0 & 0x6u) == 0x6u;
    const bool os_zmm = os_ymm && (r.xcr0 & 0xe0u) == 0xe0u;
    f.avx = os_ymm && bit(r.leaf1_ecx, 28);
    f.fma = f.avx && bit(r.leaf1_ecx, 12);
    f.avx2 = f.avx && r.max_leaf >= 7 && bit(r.leaf7_ebx, 5);
    f.avx512 = os_zmm && r.max_leaf >= 7 && bit(r.leaf7_ebx, 16) /* F */ && bit(r.leaf7_ebx, 17) /* DQ */ &&
               bit(r.leaf7_ebx, 28) /* CD */ && bit(r.leaf7_ebx, 30) /* BW */ && bit(r.leaf7_ebx, 31) /* VL */;
    return f;
}

std::string best_coretype(const CpuFeatures& f) {
    if (f.avx512) return "SkylakeX";  // OpenBLAS's AVX-512 sgemm kernels (Cooperlake adds only bf16)
    if (f.avx2 && f.fma) return f.vendor == "AuthenticAMD" || f.vendor == "HygonGenuine" ? "Zen" : "Haswell";
    if (f.avx) return "SandyBridge";
    if (f.sse4_2) return "Nehalem";
    if (f.ssse3) return "Core2";
    return "Prescott";
}

int kernel_level(std::string_view corename) {
    static constexpr std::array<std::pair<std::string_view, int>, 26> table{{
        {"katmai", 1},         {"coppermine", 1},  {"northwood", 1},  {"prescott", 1},     {"banias", 1},
        {"core2", 1},          {"penryn", 1},      {"dunnington", 1}, {"nehalem", 1},      {"atom", 1},
        {"nano", 1},           {"athlon", 1},      {"opteron", 1},    {"opteron_sse3", 1}, {"barcelona", 1},
        {"bobcat", 1},         {"sandybridge", 2}, {"bulldozer", 2},  {"piledriver", 2},   {"steamroller", 2},
        {"excavator", 2},      {"haswell", 3},     {"zen", 3},        {"skylakex", 4},     {"cooperlake", 4},
        {"sapphirerapids", 4},
    }};
    const std::string name = lower(corename);
    for (const auto& [n, level] : table)
        if (n == name) return level;
    return 0;
}

bool generic_kernels(std::string_view corename) { return kernel_level(corename) == 1; }

std::string coretype_to_force(const CpuFeatures& f, std::string_view openblas_corename, const char* user_coretype) {
    if (user_coretype != nullptr && *user_coretype != '\0') return "";  // the user's choice stands
    const int have = kernel_level(openblas_corename);
    const std::string best = best_coretype(f);
    if (have == 0 || have >= kernel_level(best)) return "";
    return best;
}

KernelReport kernel_report() {
    KernelReport k;
    k.corename = openblas_get_corename();
    k.config = openblas_get_config();
    k.generic = generic_kernels(k.corename);
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    const char* detected = std::getenv(detected_var);
    if (forced != nullptr && detected != nullptr) {
        k.source = std::string("chosen by headwise from the CPU's features (OpenBLAS alone picked ") + detected + ")";
    } else if (forced != nullptr) {
        k.source = std::string("set by OPENBLAS_CORETYPE=") + forced;
    } else {
        k.source = "detected by OpenBLAS";
    }
    CpuFeatures cpu = decode(read_cpuid());
    // HEADWISE_ISA=avx2 runs this machine as an AVX2 one: then an AVX2 core's kernels (as
    // OPENBLAS_CORETYPE=Haswell gives) are what it asked for, not a shortfall. (A bad value is
    // refused where the kernels are picked, not here.)
    try {
        if (isa_from_environment() == Isa::avx2) cpu.avx512 = false;
    } catch (const std::exception&) {  // no cap: the CPU's own best
    }
    const std::string best = best_coretype(cpu);
    if (kernel_level(k.corename) != 0 && kernel_level(k.corename) < kernel_level(best)) {
        k.warning = "OpenBLAS runs its " + std::string(k.generic ? "generic " : "") + k.corename +
                    " kernels, but this CPU can run " + best +
                    "'s: every matmul is several times slower than it "
                    "could be (unset OPENBLAS_CORETYPE, or set it to " +
                    best + ")";
    }
    return k;
}

// OpenBLAS's own function that stops its worker threads (its fork handler calls it); they start
// again with openblas_set_num_threads. Not in cblas.h: declared weak, so that an OpenBLAS without
// it leaves the threads as they are.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace {

// The variables OpenBLAS takes its thread count from, in its order of precedence.
bool threads_chosen_by_user() {
    for (const char* var : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"})
        if (const char* v = std::getenv(var); v != nullptr && *v != '\0') return true;
    return false;
}

// Runs before main(), after OpenBLAS has chosen its kernels (a library is set up before the
// program that needs it). glibc passes the program's arguments to constructors.
__attribute__((constructor)) void choose_blas_kernels(int, char** argv, char**) {
    // OpenBLAS's worker threads start with the library, and after starting (and after each call
    // they share) they spin on sched_yield for 2^28 cycles, about 0.1 s, before they sleep: the
    // whole life of a one-shot command such as `headwise attend`, where they took half the CPU
    // time on an idle machine. headwise splits its big GEMMs over its own threads (parallel.cpp),
    // so OpenBLAS runs on one thread unless the user asked for more: set to one, then its workers
    // stopped. (openblas_set_num_threads starts them again, even to set one: parallel.cpp calls
    // it only to change the count.) A program that wants OpenBLAS's threads sets them (blas.hpp).
    if (!threads_chosen_by_user()) {
        openblas_set_num_threads(1);
        if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
    }
    const char* assumed = std::getenv(assume_var);
    const std::string detected = assumed != nullptr ? assumed : openblas_get_corename();
    const std::string force = coretype_to_force(decode(read_cpuid()), detected, std::getenv("OPENBLAS_CORETYPE"));
    if (force.empty() || argv == nullptr) return;
    // OpenBLAS reads the variable only while it loads: run this program again with it set.
    setenv("OPENBLAS_CORETYPE", force.c_str(), 1);
    setenv(detected_var, detected.c_str(), 1);
    unsetenv(assume_var);
    execv("/proc/self/exe", argv);
    // No /proc (or exec refused): carry on with OpenBLAS's kernels; the report will warn.
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(detected_var);
}

}  // namespace

// Referenced by the link options of headwise::core, so every program that links the library
// carries the constructor above, whether or not it calls anything in this file.
extern "C" const int headwise_blas_coretype_anchor = 1;

}  // namespace headwise::blas
