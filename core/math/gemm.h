// GEMM through well-kept math libraries, row-major:
//   C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C
// Both dtypes go to BLIS (its OpenMP build), which allocates nothing per
// call made outside a parallel region (see gemm.cc for why not oneDNN's
// sgemm or matmul, measured, or OpenBLAS); such a call uses all of OpenMP's
// threads. Called
// inside one (to run many small products side by side) it runs on the
// calling thread, but BLIS 0.9 still opens a one-thread nested region there,
// for which libgomp mallocs a team on every call.
#ifndef AI3_CORE_MATH_GEMM_H_
#define AI3_CORE_MATH_GEMM_H_

#include <cstdint>

namespace ai3 {

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
          int64_t ldc);

}  // namespace ai3

#endif  // AI3_CORE_MATH_GEMM_H_
