// log_softmax "direct": the input as [outer, axis, inner], split into row and
// block tasks by ForEachSoftmaxSlice (core/ops/softmax/slices.h). Per slice:
// the max over the axis, the sum of exp(x - max) (vmath::Exp, which
// vectorises), then y = x - (max + log(sum)).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/math/dispatch.h"
#include "core/ops/log_softmax/log_softmax.h"
#include "core/ops/softmax/slices.h"
#include "core/ops/sigmoid/exp.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// The passes per slice (SliceKernel, slices.h).
struct LogSoftmaxMath {
  // Over `width` interleaved slices (x[k * inner + i], i < width), width 1
  // being a plain row.
  template <typename T>
  static void Block(const T* x, T* y, int64_t len, int64_t inner,
                    int64_t width, const vmath::ExpRange<T>& range) {
    T m[kSliceBlock], sum[kSliceBlock];
    BlockMaxAndZero(x, len, inner, width, m, sum);
    for (int64_t k = 0; k < len; ++k) {
      const T* __restrict xk = x + k * inner;
#pragma omp simd
      for (int64_t i = 0; i < width; ++i) {
        sum[i] += vmath::Exp(xk[i] - m[i], range);
      }
    }
    for (int64_t i = 0; i < width; ++i) m[i] += std::log(sum[i]);
    for (int64_t k = 0; k < len; ++k) {
      const T* __restrict xk = x + k * inner;
      T* __restrict yk = y + k * inner;
#pragma omp simd
      for (int64_t i = 0; i < width; ++i) yk[i] = xk[i] - m[i];
    }
  }

  template <typename T>
  static void Row(const T* __restrict x, T* __restrict y, int64_t len,
                  const vmath::ExpRange<T>& range) {
    T m = x[0];
#pragma omp simd reduction(max : m)
    for (int64_t k = 0; k < len; ++k) m = std::max(m, x[k]);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t k = 0; k < len; ++k) sum += vmath::Exp(x[k] - m, range);
    const T shift = m + std::log(sum);
#pragma omp simd
    for (int64_t k = 0; k < len; ++k) y[k] = x[k] - shift;
  }
};

AI3_REGISTER_ALGORITHM(
    LogSoftmaxAttrs, "direct", Device::kCPU,
    KernelAlgorithm<LogSoftmaxAttrs,
                    SliceKernel<LogSoftmaxAttrs, LogSoftmaxMath>>);

}  // namespace
}  // namespace ai3
