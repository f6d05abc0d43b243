// relu "direct": one pass over the elements, vectorised by the compiler
// (x < 0 ? 0 : x is a single max instruction that keeps NaN) and split over
// OpenMP threads when the tensor is large enough to pay for them.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/relu/relu.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Below this many elements threads cost more than they save.
constexpr int64_t kParallelThreshold = 1 << 15;

template <typename T>
void Relu(const T* __restrict x, T* __restrict y, int64_t n) {
  ParallelRanges(0, n, n >= kParallelThreshold, [=](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) y[i] = x[i] < T(0) ? T(0) : x[i];
  });
}

class DirectKernel : public Kernel {
 public:
  void Run(const Tensor& input, const Tensor& output, void*) override {
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Relu<T>(input.data_as<const T>(), output.data_as<T>(), input.numel());
    });
  }
};

class Direct : public Algorithm<ReluAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const ReluAttrs&,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<DirectKernel>();
  }
};

AI3_REGISTER_ALGORITHM(ReluAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
