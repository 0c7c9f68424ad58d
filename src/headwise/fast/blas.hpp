// headwise/fast/blas.hpp -- the one door to BLAS (OpenBLAS) for the library's matmuls.
//
// Kept apart from xtensor-blas on purpose: including <cblas.h> next to xtensor-blas defines its
// enums twice, so the raw calls live in blas.cpp and everything else sees plain pointers.
#pragma once

#include <cstddef>

namespace headwise::blas {

// Row-major C (m, n) = alpha * op(A) * op(B) + beta * C, where op(X) is X or its transpose.
// A is (m, k) or, transposed, stored (k, m); B is (k, n) or, transposed, stored (n, k).
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
          std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);

// How many threads OpenBLAS uses (1 inside code that already splits work across cores).
void set_threads(int n);
int threads();

}  // namespace headwise::blas
