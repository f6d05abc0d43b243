// softmax "direct": the input as [outer, axis, inner], split into row and
// block tasks by ForEachSoftmaxSlice (slices.h). Three passes over each slice
// (max, exp and sum, scale by 1/sum), all in the layer's dtype; a block keeps
// its running max and sum on the stack. exp is vmath::Exp
// (core/ops/sigmoid/exp.h), which vectorises where std::exp would not.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/math/dispatch.h"
#include "core/ops/sigmoid/exp.h"
#include "core/ops/softmax/slices.h"
#include "core/ops/softmax/softmax.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// The passes per slice (SliceKernel, slices.h).
struct SoftmaxMath {
  template <typename T>
  static void Row(const T* __restrict x, T* __restrict y, int64_t len,
                  const vmath::ExpRange<T>& range) {
    T m = x[0];
#pragma omp simd reduction(max : m)
    for (int64_t k = 0; k < len; ++k) m = std::max(m, x[k]);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t k = 0; k < len; ++k) {
      const T e = vmath::Exp(x[k] - m, range);
      y[k] = e;
      sum += e;
    }
    const T scale = T(1) / sum;
#pragma omp simd
    for (int64_t k = 0; k < len; ++k) y[k] *= scale;
  }

  // Softmax over the axis of x[k * inner + i] for i < width
  // (width <= kSliceBlock).
  template <typename T>
  static void Block(const T* x, T* y, int64_t len, int64_t inner,
                    int64_t width, const vmath::ExpRange<T>& range) {
    T m[kSliceBlock], sum[kSliceBlock];
    BlockMaxAndZero(x, len, inner, width, m, sum);
    for (int64_t k = 0; k < len; ++k) {
      const T* __restrict xk = x + k * inner;
      T* __restrict yk = y + k * inner;
#pragma omp simd
      for (int64_t i = 0; i < width; ++i) {
        const T e = vmath::Exp(xk[i] - m[i], range);
        yk[i] = e;
        sum[i] += e;
      }
    }
    for (int64_t i = 0; i < width; ++i) sum[i] = T(1) / sum[i];
    for (int64_t k = 0; k < len; ++k) {
      T* __restrict yk = y + k * inner;
#pragma omp simd
      for (int64_t i = 0; i < width; ++i) yk[i] *= sum[i];
    }
  }
};

AI3_REGISTER_ALGORITHM(
    SoftmaxAttrs, "direct", Device::kCPU,
    KernelAlgorithm<SoftmaxAttrs,
                    SliceKernel<SoftmaxAttrs, SoftmaxMath>>);

}  // namespace
}  // namespace ai3
