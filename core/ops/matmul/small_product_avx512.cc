// matmul's small products built for AVX-512: small_product_kernel.h with
// 64-byte vectors. Compiled with AVX-512 flags (core/ops/defs.bzl), so it is
// only ever called after core/cpu.h found AVX-512 on the running CPU.
#include "core/ops/matmul/small_product_kernel.h"

namespace ai3 {

void SmallProductAvx512(const float* a, const float* b, float* c, int64_t m,
                        int64_t k, int64_t n, float* packed) {
  SmallProduct<float, /*kVectorBytes=*/64>::Run(a, b, c, m, k, n, packed);
}

void SmallProductAvx512(const double* a, const double* b, double* c, int64_t m,
                        int64_t k, int64_t n, double* packed) {
  SmallProduct<double, /*kVectorBytes=*/64>::Run(a, b, c, m, k, n, packed);
}

}  // namespace ai3
