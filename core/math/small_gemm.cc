// SmallGemm: small_gemm_kernel.h built for AVX2 here, for AVX-512 in
// small_gemm_avx512.cc; the CPU picks (core/cpu.h).
#include "core/math/small_gemm.h"

#include "core/cpu.h"
#include "core/math/small_gemm_kernel.h"

namespace ai3 {

template <typename T>
int64_t SmallGemmPackedElements(bool trans_b, int64_t k, int64_t n) {
  // AVX-512's padding covers AVX2's (its lanes are a multiple of AVX2's).
  return SmallGemmKernel<T, 64>::PackedElements(trans_b, k, n);
}

template <typename T>
void SmallGemm(bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
               const T* a, const T* b, T* c, T* packed) {
  if (KernelIsa() == Isa::kAvx512) {
    SmallGemmAvx512(trans_b, m, n, k, alpha, a, b, c, packed);
  } else {
    SmallGemmKernel<T, 32>::Run(trans_b, m, n, k, alpha, a, b, c, packed);
  }
}

template int64_t SmallGemmPackedElements<float>(bool, int64_t, int64_t);
template int64_t SmallGemmPackedElements<double>(bool, int64_t, int64_t);
template void SmallGemm<float>(bool, int64_t, int64_t, int64_t, float,
                               const float*, const float*, float*, float*);
template void SmallGemm<double>(bool, int64_t, int64_t, int64_t, double,
                                const double*, const double*, double*, double*);

}  // namespace ai3
