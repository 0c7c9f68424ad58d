// emulator/wmma.hpp -- nvcuda::wmma (tensor-core fragments) for g++, included by emulator.hpp.
//
// On a GPU a fragment is spread over the 32 lanes of a warp in a layout the hardware keeps to
// itself; every wmma call is made by the whole warp at once. Here every lane holds the whole
// 16x16 tile (num_elements = 256, row-major whatever the memory layout), and every call is a
// warp collective with the full mask: all 32 lanes must make it, at the same line, with the same
// pointer, ldm and layout, or the launch stops naming the line. mma_sync computes the product
// once per warp and hands it to every lane.
//
// The arithmetic: matrix_a and matrix_b hold __half or __nv_bfloat16, so whatever is loaded or
// filled into them is rounded to 16 bits (round to nearest even, emulator/half.hpp); the
// accumulator is float. d = c + a b with each product exact (11- or 8-bit mantissas multiply into
// at most 22 bits, which a float holds) and the sum over k = 0..15 taken in order in fp32. Tensor
// cores add in an unspecified order (and may truncate on the way), so a GPU agrees to within fp32
// rounding of a 16-term sum, not bit for bit. Only the 16x16x16 shape is modelled, as is CUDA's
// rule that ldm is a multiple of 16 bytes and the pointer is 32-byte aligned.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <type_traits>

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "the emulator models the 16x16x16 wmma shape only");
    static_assert(std::is_same_v<Use, accumulator> ? std::is_same_v<T, float>
                                                   : (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>),
                  "matrix_a / matrix_b fragments hold __half or __nv_bfloat16, accumulators float");
    static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
    static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
    static constexpr int num_elements = rows * cols;  // all of it, in every emulated lane
    using element_type = T;
    T x[num_elements];  // element (r, c) at x[r * cols + c]
};

namespace machine {

[[noreturn]] void bad_call(const char* what, const std::string& why, const std::source_location& where);

// The warp meets here; returns the warp's collective count (the same in every lane).
inline std::uint64_t meet(const char* what, std::uint64_t check, const std::source_location& where) {
    using namespace headwise::emulator::machine;
    return warp_collective({what, WarpOp::wmma, 0xffffffffu, 0, -1, check, where}).sequence;
}

template <class T>
void check_memory(const char* what, const T* p, unsigned ldm, const std::source_location& where) {
    if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0)
        bad_call(what, "the pointer must be 32-byte (256-bit) aligned", where);
    if ((ldm * sizeof(T)) % 16 != 0)
        bad_call(what, "ldm = " + std::to_string(ldm) + " elements is not a multiple of 16 bytes", where);
}

inline std::uint64_t fingerprint(const void* p, unsigned ldm, int layout) {
    return reinterpret_cast<std::uintptr_t>(p) * 31u + ldm * 7u + unsigned(layout);
}

// Element (r, c) of a tile in memory: row-major means (r, c) at p[r * ldm + c].
template <class T>
const T& at(const T* p, unsigned ldm, bool row_major, int r, int c) {
    return row_major ? p[std::size_t(r) * ldm + c] : p[std::size_t(c) * ldm + r];
}

template <class Use, class Layout>
constexpr bool is_row_major() {
    // matrix_a / matrix_b carry their layout in the type; accumulators take it as an argument.
    return std::is_same_v<Layout, row_major>;
}

}  // namespace machine

template <class Use, int M, int N, int K, class T, class Layout, class V>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const V& value,
                   std::source_location where = std::source_location::current()) {
    machine::meet("wmma::fill_fragment", 0, where);
    const T v = T(float(value));  // rounded to the fragment's precision
    for (T& e : f.x) e = v;
}

// matrix_a / matrix_b: the layout is the fragment's.
template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm,
                      std::source_location where = std::source_location::current()) {
    static_assert(!std::is_same_v<Use, accumulator>,
                  "an accumulator load names its layout: mem_row_major or mem_col_major");
    machine::check_memory("wmma::load_matrix_sync", p, ldm, where);
    constexpr bool row = machine::is_row_major<Use, Layout>();
    machine::meet("wmma::load_matrix_sync", machine::fingerprint(p, ldm, row), where);
    using F = fragment<Use, M, N, K, T, Layout>;
    for (int r = 0; r < F::rows; ++r)
        for (int c = 0; c < F::cols; ++c) f.x[r * F::cols + c] = machine::at(p, ldm, row, r, c);
}

template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float>& f, const float* p, unsigned ldm, layout_t layout,
                      std::source_location where = std::source_location::current()) {
    machine::check_memory("wmma::load_matrix_sync", p, ldm, where);
    machine::meet("wmma::load_matrix_sync", machine::fingerprint(p, ldm, layout), where);
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) f.x[r * N + c] = machine::at(p, ldm, layout == mem_row_major, r, c);
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t layout,
                       std::source_location where = std::source_location::current()) {
    machine::check_memory("wmma::store_matrix_sync", p, ldm, where);
    machine::meet("wmma::store_matrix_sync", machine::fingerprint(p, ldm, layout), where);
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) {
            const std::size_t e = layout == mem_row_major ? std::size_t(r) * ldm + c : std::size_t(c) * ldm + r;
            p[e] = f.x[r * N + c];
        }
}

// d = a b + c: (16, 16) = (16, 16) (16, 16) + (16, 16), fp32 accumulation.
template <int M, int N, int K, class T, class LayoutA, class LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LayoutA>& a,
              const fragment<matrix_b, M, N, K, T, LayoutB>& b, const fragment<accumulator, M, N, K, float>& c,
              std::source_location where = std::source_location::current()) {
    const std::uint64_t sequence = machine::meet("wmma::mma_sync", 0, where);
    headwise::emulator::machine::WarpScratch& product = headwise::emulator::machine::warp_scratch(where);
    if (product.sequence != sequence) {  // the first lane through computes it for the warp
        for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
                float sum = c.x[m * N + n];
                for (int k = 0; k < K; ++k) sum += float(a.x[m * K + k]) * float(b.x[k * N + n]);
                product.values[m * N + n] = sum;
            }
        product.sequence = sequence;
    }
    for (int e = 0; e < M * N; ++e) d.x[e] = product.values[e];
}

}  // namespace nvcuda::wmma
