#include "core/math/gemm.h"

#include <cblas.h>

namespace ai3 {

// Both dtypes go to OpenBLAS. oneDNN's dnnl_sgemm was used for float32
// before: on the AVX2 EPYC these benchmarks run on it measured within noise
// of OpenBLAS' sgemm (each ahead on some conv shapes), but it mallocs its
// packing buffers on every call, while OpenBLAS packs into a buffer pool it
// allocates once -- so a Model's forward pass, which calls GEMM per layer,
// allocates nothing (core/model_alloc_test.cc).
template <>
void Gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

template <>
void Gemm<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  double alpha, const double* a, int64_t lda, const double* b,
                  int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

}  // namespace ai3
