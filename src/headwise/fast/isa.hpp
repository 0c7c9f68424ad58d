// headwise/fast/isa.hpp -- which instruction set the hand-written kernels use, and HEADWISE_ISA.
//
// headwise spells its hot loops for three instruction sets: plain C++ that the compiler vectorises
// (scalar), AVX2 with FMA (16 registers of 8 floats) and AVX-512 (32 registers of 16 floats). Each
// family of kernels runs the widest one the CPU has; HEADWISE_ISA=scalar|avx2|avx512 asks for a
// narrower one, so that an AVX-512 machine can run and measure what an AVX2-only CPU would. It is
// read once per process; a name headwise does not know, or a set wider than the CPU has, is a
// usage_error (one line; exit code 2 from the command-line programs). The fused attention and the
// exponentials (fast_isa) and the decoder's integer products (model/quant_dot.hpp) share it.
#pragma once

#include <optional>
#include <string_view>

namespace headwise {

// Ordered: each set is a superset of the ones before it, as far as headwise's kernels go.
enum class Isa { scalar, avx2, avx512 };

std::string_view to_string(Isa isa);

// The set `name` names ("scalar", "avx2", "avx512"); usage_error for any other name.
Isa parse_isa(std::string_view name);

// What HEADWISE_ISA asks for, parsed once per process: nullopt when it is unset or empty.
std::optional<Isa> isa_from_environment();

// The set a family of kernels uses when the widest it can run here is `widest`: `asked` where
// given, else `widest`. usage_error when `asked` is wider than `widest`.
Isa isa_within(Isa widest, std::optional<Isa> asked);

namespace fast {

// The widest set headwise::fast has kernels for that this CPU runs: avx512 (AVX-512F), avx2
// (AVX2 and FMA), else scalar.
Isa widest_fast_isa();

// What headwise::fast's register tiles and exponentials use in this process:
// isa_within(widest_fast_isa(), isa_from_environment()), worked out once.
Isa fast_isa();

}  // namespace fast

}  // namespace headwise
