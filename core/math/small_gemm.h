// One small matrix product on the calling thread, register-blocked:
//   c[m, n] = alpha * a[m, k] @ op(b)
// with op(b) = b ([k, n]) or, with trans_b, b^T (b is [n, k]); everything
// row-major and dense. For batches of small products that the caller spreads
// over its threads (attention per head and window: Swin's 49x32 @ 32x49,
// ViT's 197x64 @ 64x197), where a threaded library call per product runs
// each one poorly (gemm.h). AVX-512 where the CPU has it (core/cpu.h).
//
// `packed`: SmallGemmPackedElements(trans_b, k, n) elements of scratch, the
// caller's (one per thread), so that a call allocates nothing.
#ifndef AI3_CORE_MATH_SMALL_GEMM_H_
#define AI3_CORE_MATH_SMALL_GEMM_H_

#include <cstdint>

namespace ai3 {

// Elements of `packed` SmallGemm needs, for either instruction set.
template <typename T>
int64_t SmallGemmPackedElements(bool trans_b, int64_t k, int64_t n);

template <typename T>
void SmallGemm(bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
               const T* a, const T* b, T* c, T* packed);

}  // namespace ai3

#endif  // AI3_CORE_MATH_SMALL_GEMM_H_
