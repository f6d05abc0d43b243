#include "core/math/gemm.h"

#include <algorithm>

#include <blis.h>
#include <omp.h>

namespace ai3 {
namespace {

// Both dtypes go to BLIS (its OpenMP build). Why BLIS: measured on the
// 2-core AVX2 EPYC with the conv shapes of resnet18 at batch 1 (M x N x K
// from 64x3136x576 down to 512x4x512), BLIS' sgemm ran at 80-160 GFLOP/s,
// within about 10% of oneDNN's dnnl_sgemm and 1.1-4x OpenBLAS 0.3.21 on the
// small and skinny products; and it packs into blocks it pools once, so a
// call allocates nothing, while dnnl_sgemm mallocs its packing buffers (3
// allocations a call) -- a Model's forward pass, which calls GEMM per layer,
// stays allocation free (core/model_alloc_test.cc).
//
// Threads: the caller's OpenMP setting (omp_get_max_threads) outside a
// parallel region; inside one (an algorithm spreading many small products
// over the threads itself) each call runs on its own thread. That nested
// call is not allocation free: BLIS 0.9 opens a one-thread region even so,
// and libgomp mallocs a team for every nested region (hence winograd runs
// its position products one after another; see winograd.cc).
rntm_t ThreadsForThisCall() {
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(omp_in_parallel() ? 1 : omp_get_max_threads(),
                           &rntm);
  return rntm;
}

// The typed BLIS entry point for each dtype.
void BlisGemm(dim_t m, dim_t n, dim_t k, float* alpha, float* a, inc_t rs_a,
              inc_t cs_a, float* b, inc_t rs_b, inc_t cs_b, float* beta,
              float* c, inc_t rs_c, rntm_t* rntm) {
  bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, alpha, a, rs_a,
               cs_a, b, rs_b, cs_b, beta, c, rs_c, 1, nullptr, rntm);
}
void BlisGemm(dim_t m, dim_t n, dim_t k, double* alpha, double* a,
              inc_t rs_a, inc_t cs_a, double* b, inc_t rs_b, inc_t cs_b,
              double* beta, double* c, inc_t rs_c, rntm_t* rntm) {
  bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, alpha, a, rs_a,
               cs_a, b, rs_b, cs_b, beta, c, rs_c, 1, nullptr, rntm);
}

}  // namespace

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
          T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  rntm_t rntm = ThreadsForThisCall();
  // BLIS runs small and skinny products unpacked ("sup"), large ones through
  // its packed blocked path, switching on thresholds of its own that on the
  // zen3 configuration send transformer-sized products (M = 197 tokens, N
  // and K of 768-3072) to sup, which measured 67-100 GFLOP/s there against
  // 140-145 packed. Measured over conv, linear and attention shapes (2
  // threads), packed won only when both M and N are at least ~192 and one
  // is at least 768; sup won everywhere else (e.g. 256x196x2304: 132 vs 104;
  // 512x4x512: 56 vs 16).
  if (std::min(m, n) >= 192 && std::max(m, n) >= 768) {
    bli_rntm_disable_l3_sup(&rntm);
  }
  // A row-major X with leading dimension ld is read with strides (ld, 1),
  // or (1, ld) when it is to be transposed; BLIS takes both strides.
  BlisGemm(m, n, k, &alpha, const_cast<T*>(a), trans_a ? 1 : lda,
           trans_a ? lda : 1, const_cast<T*>(b), trans_b ? 1 : ldb,
           trans_b ? ldb : 1, &beta, c, ldc, &rntm);
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, float,
                          const float*, int64_t, const float*, int64_t, float,
                          float*, int64_t);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double,
                           const double*, int64_t, const double*, int64_t,
                           double, double*, int64_t);

}  // namespace ai3
