// softmax "direct": the input as [outer, axis, inner]. Three passes over
// each slice (max, exp and sum, scale by 1/sum), all in the layer's dtype.
//   inner == 1 (the last axis, the common case): one task per row; the
//     passes run along the contiguous row, vectorised.
//   inner > 1: one task per (outer, block of up to kBlock inner positions);
//     each pass walks the axis with the block's positions as the vectorised
//     loop, keeping the block's running max and sum on the stack.
// Tasks are split over OpenMP threads when there is enough work; exp is
// vmath::Exp (core/ops/sigmoid/exp.h), which vectorises where std::exp
// would not.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/sigmoid/exp.h"
#include "core/ops/softmax/softmax.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Below this many elements threads cost more than they save.
constexpr int64_t kParallelThreshold = 1 << 13;
// Inner positions per task when the axis is not the last.
constexpr int64_t kBlock = 256;

template <typename T>
void SoftmaxRow(const T* __restrict x, T* __restrict y, int64_t len,
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

// Softmax over the axis of x[k * inner + i] for i < width (width <= kBlock).
template <typename T>
void SoftmaxBlock(const T* x, T* y, int64_t len, int64_t inner,
                  int64_t width, const vmath::ExpRange<T>& range) {
  T m[kBlock], sum[kBlock];
  for (int64_t i = 0; i < width; ++i) {
    m[i] = x[i];
    sum[i] = 0;
  }
  for (int64_t k = 1; k < len; ++k) {
    const T* __restrict xk = x + k * inner;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) m[i] = std::max(m[i], xk[i]);
  }
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

template <typename T>
void Softmax(const SoftmaxAttrs::Split& s, const T* x, T* y) {
  const int64_t slice = s.axis * s.inner;
  const bool parallel = s.outer * slice >= kParallelThreshold;
  const vmath::ExpRange<T> range;  // a variable, not literals: see exp.h
  if (s.inner == 1) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < s.outer; ++o) {
      SoftmaxRow<T>(x + o * s.axis, y + o * s.axis, s.axis, range);
    }
    return;
  }
  const int64_t blocks = (s.inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < s.outer * blocks; ++t) {
    const int64_t o = t / blocks;
    const int64_t i0 = (t % blocks) * kBlock;
    const int64_t width = std::min(kBlock, s.inner - i0);
    SoftmaxBlock<T>(x + o * slice + i0, y + o * slice + i0, s.axis, s.inner,
                    width, range);
  }
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const SoftmaxAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const SoftmaxAttrs::Split s = attrs_.SplitOf(input.shape);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Softmax<T>(s, input.data_as<const T>(), output.data_as<T>());
    });
  }

 private:
  SoftmaxAttrs attrs_;
};

class Direct : public Algorithm<SoftmaxAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const SoftmaxAttrs& attrs,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<DirectKernel>(attrs);
  }
};

AI3_REGISTER_ALGORITHM(SoftmaxAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
