// sigmoid "direct": one pass over the elements, split over OpenMP threads
// when the tensor is large enough to pay for them, the loop vectorised by
// the compiler: exp is vmath::Exp (core/ops/sigmoid/exp.h), written to
// vectorise, where std::exp would not.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/sigmoid/exp.h"
#include "core/ops/sigmoid/sigmoid.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Below this many elements threads cost more than they save (a
// transcendental per element: a lower bar than relu's).
constexpr int64_t kParallelThreshold = 1 << 13;

template <typename T>
void Sigmoid(const T* __restrict x, T* __restrict y, int64_t n) {
  vmath::ExpRange<T> range;  // a variable, not literals: see exp.h
  HideFromOptimizer(range);
  ParallelRanges(0, n, n >= kParallelThreshold, [=](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const T v = x[i];
      y[i] = T(1) / (T(1) + vmath::Exp(-v, range));
    }
  });
}

class DirectKernel : public Kernel {
 public:
  void Run(const Tensor& input, const Tensor& output, void*) override {
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Sigmoid<T>(input.data_as<const T>(), output.data_as<T>(), input.numel());
    });
  }
};

class Direct : public Algorithm<SigmoidAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const SigmoidAttrs&,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<DirectKernel>();
  }
};

AI3_REGISTER_ALGORITHM(SigmoidAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
