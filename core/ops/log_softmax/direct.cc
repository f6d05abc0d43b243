// log_softmax "direct": the input as [outer, axis, inner]. Per slice: the
// max over the axis, the sum of exp(x - max) (vmath::Exp, which vectorises),
// then y = x - (max + log(sum)).
//   inner == 1 (the last axis): one task per row, passes along the row.
//   inner > 1: one task per (outer, block of inner positions), each pass
//     walking the axis with the block as the vectorised loop.
// Tasks are split over OpenMP threads when there is enough work.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/log_softmax/log_softmax.h"
#include "core/ops/sigmoid/exp.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 13;
constexpr int64_t kBlock = 256;

// Over `width` interleaved slices (x[k * inner + i], i < width), width 1
// being a plain row.
template <typename T>
void LogSoftmaxSlices(const T* x, T* y, int64_t len, int64_t inner,
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
void LogSoftmaxRow(const T* __restrict x, T* __restrict y, int64_t len,
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

template <typename T>
void LogSoftmax(const SoftmaxAttrs::Split& s, const T* x, T* y) {
  const int64_t slice = s.axis * s.inner;
  const bool parallel = s.outer * slice >= kParallelThreshold;
  const vmath::ExpRange<T> range;  // a variable, not literals: see exp.h
  if (s.axis == 0) return;
  if (s.inner == 1) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < s.outer; ++o) {
      LogSoftmaxRow<T>(x + o * s.axis, y + o * s.axis, s.axis, range);
    }
    return;
  }
  const int64_t blocks = (s.inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < s.outer * blocks; ++t) {
    const int64_t o = t / blocks;
    const int64_t i0 = (t % blocks) * kBlock;
    LogSoftmaxSlices<T>(x + o * slice + i0, y + o * slice + i0, s.axis,
                        s.inner, std::min(kBlock, s.inner - i0), range);
  }
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const LogSoftmaxAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const SoftmaxAttrs::Split s = attrs_.SplitOf(input.shape);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      LogSoftmax<T>(s, input.data_as<const T>(), output.data_as<T>());
    });
  }

 private:
  LogSoftmaxAttrs attrs_;
};

class Direct : public Algorithm<LogSoftmaxAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const LogSoftmaxAttrs& attrs,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<DirectKernel>(attrs);
  }
};

AI3_REGISTER_ALGORITHM(LogSoftmaxAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
