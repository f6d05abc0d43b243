// GEMM through well-kept math libraries, row-major:
//   C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C
// float32 goes to oneDNN's dnnl_sgemm (the fastest SGEMM measured on the
// target machines), float64 to OpenBLAS' cblas_dgemm (oneDNN has no DGEMM).
// Both thread over OpenMP; call it from outside parallel regions.
#ifndef AI3_CORE_MATH_GEMM_H_
#define AI3_CORE_MATH_GEMM_H_

#include <cstdint>

namespace ai3 {

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
          T* c, int64_t ldc);

}  // namespace ai3

#endif  // AI3_CORE_MATH_GEMM_H_
