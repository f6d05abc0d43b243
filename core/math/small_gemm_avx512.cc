// SmallGemm built for AVX-512: small_gemm_kernel.h with 64-byte vectors.
// Compiled with AVX-512 flags (core/BUILD), so it is only ever called after
// core/cpu.h found AVX-512 on the running CPU.
#include "core/math/small_gemm_kernel.h"

namespace ai3 {

void SmallGemmAvx512(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, const float* b, float* c, float* packed) {
  SmallGemmKernel<float, 64>::Run(trans_b, m, n, k, alpha, a, b, c, packed);
}

void SmallGemmAvx512(bool trans_b, int64_t m, int64_t n, int64_t k,
                     double alpha, const double* a, const double* b, double* c,
                     double* packed) {
  SmallGemmKernel<double, 64>::Run(trans_b, m, n, k, alpha, a, b, c, packed);
}

}  // namespace ai3
