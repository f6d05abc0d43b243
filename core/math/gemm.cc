#include "core/math/gemm.h"

#include <algorithm>

#include <blis.h>
#include <omp.h>

namespace ai3 {
namespace {

// Both dtypes go to BLIS (its OpenMP build), because it is the one library
// here whose GEMM allocates nothing per call: it packs into blocks it pools
// once, so a Model's forward pass, which calls GEMM per layer, stays
// allocation free (core/model_alloc_test.cc). oneDNN 3.2 (the "guess"
// library) is faster on AVX-512 machines but allocates on every call:
// dnnl_sgemm mallocs its packing buffers (2-3 a call), and its matmul
// primitive, even created once per shape with a user-managed scratchpad and
// an argument array built once, makes 8 (execute() builds an argument map
// and an execution context per call). It has no float64 GEMM at all (the
// matmul primitive is unimplemented for f64 on CPU; there is no
// dnnl_dgemm). So the rule: BLIS for every product; oneDNN would be taken
// where it wins only if it ran allocation free. Per call site, that is
// conv2d gemm (im2col), kn2row and winograd's position products, linear
// and matmul: each runs inside an ai3::Model forward that
// core/model_alloc_test.cc asserts allocation free (the conv ones in NCHW
// and in the layout pass's NHWC), so none can take oneDNN 3.2's GEMM
// without breaking that; a user who wants oneDNN's speed on a conv names
// "guess" (its own primitive, the known allocating exception).
//
// What that costs, measured by //bench/onednn:gemm (float32, GFLOP/s, 1
// thread, thread CPU time because the machine was shared; AVX-512 Xeon with
// AMX; oneDNN picks brg:avx512_core; BLIS runs its haswell (AVX2)
// kernels there, see "Kernels" below):
//   product                      M x N x K        BLIS  matmul  sgemm
//   resnet18 conv1 7x7/2      64 x 12544 x  147  101.3  162.0  184.5
//   resnet 3x3 64             64 x  3136 x  576  105.2  142.4  195.7
//   resnet 3x3 256           256 x   196 x 2304  114.1  175.9  186.7
//   resnet 3x3 512           512 x    49 x 4608   97.5  146.7  150.2
//   resnet50 1x1 256<-64     256 x  3136 x   64  111.3  169.3  206.3
//   resnet50 1x1 2048<-512  2048 x    49 x  512   95.0  144.4  145.1
//   mobilenet_v2 1x1 96<-16   96 x 12544 x   16   98.6  131.7  129.1
//   mobilenet_v2 1x1 32<-144  32 x   784 x  144  109.9  184.9  205.7
//   vit qkv                  197 x  2304 x  768  102.9  186.4  193.0
//   vit fc2                  197 x   768 x 3072  106.5  191.8  178.0
//   resnet fc (GEMV)           1 x  1000 x  512   32.6   12.3   28.3
// i.e. oneDNN 1.3-1.9x BLIS on this CPU except the GEMV; on 2 threads the
// least disturbed rows gave the same ratios (e.g. 1024x196x256: BLIS 207,
// matmul 380, sgemm 381). Measured earlier on the 2-core AVX2 EPYC, where
// BLIS runs its zen3 kernels, its sgemm ran within about 10% of dnnl_sgemm
// and 1.1-4x OpenBLAS 0.3.21 on the small and skinny products.
//
// Threads: the caller's OpenMP setting (omp_get_max_threads) outside a
// parallel region; inside one (an algorithm spreading many small products
// over the threads itself) each call runs on its own thread. That nested
// call is not allocation free: BLIS 0.9 opens a one-thread region even so,
// and libgomp mallocs a team for every nested region (hence winograd runs
// its position products one after another; see winograd.cc).
//
// Kernels: BLIS picks its kernel set from CPUID at its first call. On an
// Intel AVX-512 CPU it picks 'skx' or 'haswell' by the number of AVX-512 FMA
// units it knows from the model number; the generic virtual "Intel Xeon
// Processor" makes it print "Number of FMA units unknown" and take
// haswell. Debian's BLIS 0.9 does carry skx (BLIS_ARCH_TYPE=0 selects it),
// and measured on that Xeon (2 threads, quiet): 1024^3 sgemm 315 GFLOP/s on
// skx against 203 on haswell, 3x3 convs through 'gemm' 5-25% faster; but
// its skx configuration has no small/skinny ("sup") kernels, and winograd's
// per-position products, which are all small, became 1.5-2.9x slower
// (e.g. 512 ch at 7x7: 1.5 -> 4.5 ms; with sup off on both, 3.4 vs 4.2).
// So ai3 leaves BLIS's choice alone; a user can set BLIS_ARCH_TYPE.
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
void BlisGemm(dim_t m, dim_t n, dim_t k, double* alpha, double* a, inc_t rs_a,
              inc_t cs_a, double* b, inc_t rs_b, inc_t cs_b, double* beta,
              double* c, inc_t rs_c, rntm_t* rntm) {
  bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, alpha, a, rs_a,
               cs_a, b, rs_b, cs_b, beta, c, rs_c, 1, nullptr, rntm);
}

}  // namespace

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
          int64_t ldc) {
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
