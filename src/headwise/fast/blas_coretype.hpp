// headwise/fast/blas_coretype.hpp -- the right OpenBLAS kernels on every x86-64 CPU.
//
// Debian's OpenBLAS (0.3.21, built with DYNAMIC_ARCH) picks its kernels once, when the library is
// loaded, from the CPU's family and model numbers. A CPU newer than the library (seen: a Xeon of
// family 6 model 207 with AVX-512) is not in its table, and it falls back to the generic
// "Prescott" kernels: sgemm 5.7x slower, silently. The only way to choose is the environment
// variable OPENBLAS_CORETYPE, read at load time, before any of our code runs.
//
// So every headwise binary carries a constructor (blas_coretype.cpp) that compares OpenBLAS's
// choice with what the CPU's feature flags allow. When OpenBLAS chose weaker kernels than the
// CPU supports and nobody set OPENBLAS_CORETYPE, it sets it to the best core type and starts the
// same program again (execv of /proc/self/exe, same arguments): a few milliseconds, paid only
// on the machines OpenBLAS does not know. Everything the program starts inherits the variable.
// A user's own OPENBLAS_CORETYPE is always respected.
//
// The decision itself is plain functions of recorded cpuid registers, unit-tested on the
// register values of several CPUs (tests/blas_coretype_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace headwise::blas {

// The cpuid registers the decision reads, as a CPU reports them.
struct CpuidRecord {
    std::uint32_t leaf0_ebx = 0, leaf0_edx = 0, leaf0_ecx = 0;  // vendor string, in that order
    std::uint32_t max_leaf = 0;                                 // leaf 0, eax
    std::uint32_t leaf1_eax = 0, leaf1_ecx = 0, leaf1_edx = 0;  // family/model, feature flags
    std::uint32_t leaf7_ebx = 0, leaf7_ecx = 0, leaf7_edx = 0;  // extended features (subleaf 0)
    std::uint32_t xcr0 = 0;  // XGETBV(0): which register states the OS saves (0 without OSXSAVE)
};

// This CPU's registers.
CpuidRecord read_cpuid();

struct CpuFeatures {
    std::string vendor;              // "GenuineIntel", "AuthenticAMD", ...
    unsigned family = 0, model = 0;  // display family and model (extended fields folded in)
    bool sse3 = false, ssse3 = false, sse4_2 = false;
    bool avx = false, fma = false, avx2 = false;  // usable: CPU has it and the OS saves YMM
    bool avx512 = false;                          // F, CD, DQ, BW and VL, and the OS saves the opmask and ZMM state
};

CpuFeatures decode(const CpuidRecord& r);

// The OpenBLAS core type whose kernels use the most of these features (a name OPENBLAS_CORETYPE
// accepts): SkylakeX (AVX-512), Haswell or Zen (AVX2 + FMA), SandyBridge (AVX), Nehalem, Core2
// or Prescott (SSE).
std::string best_coretype(const CpuFeatures& f);

// How wide the vector kernels of an OpenBLAS core name are: 1 = SSE ("generic"), 2 = AVX,
// 3 = AVX2 + FMA, 4 = AVX-512; 0 for a name this table does not know (newer OpenBLAS).
int kernel_level(std::string_view corename);

// True for the SSE-only cores OpenBLAS falls back to (Prescott and friends).
bool generic_kernels(std::string_view corename);

// What to do at start-up: the core type to re-run with, or "" to keep OpenBLAS's choice.
// `user_coretype` is OPENBLAS_CORETYPE as the user set it (nullptr when unset): always kept.
// A core name this table does not know is kept too (a newer OpenBLAS knows better).
std::string coretype_to_force(const CpuFeatures& f, std::string_view openblas_corename, const char* user_coretype);

// What the running process uses, for `./headwise bench` and the benchmark's context.
struct KernelReport {
    std::string corename;  // openblas_get_corename(), e.g. "SkylakeX"
    std::string config;    // openblas_get_config()
    std::string source;    // who chose it, in words
    bool generic = false;  // OpenBLAS's SSE-only kernels (Prescott and friends)
    std::string warning;   // non-empty when the CPU could run wider kernels than these
};
KernelReport kernel_report();

}  // namespace headwise::blas
