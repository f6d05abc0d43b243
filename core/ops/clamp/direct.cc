// clamp "direct": one pass over the elements, vectorised by the compiler
// (each comparison is one max/min instruction, written so NaN passes
// through) and split over OpenMP threads when the tensor is large enough to
// pay for them.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/clamp/clamp.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Below this many elements threads cost more than they save.
constexpr int64_t kParallelThreshold = 1 << 15;

template <typename T>
void Clamp(const T* __restrict x, T* __restrict y, int64_t n, T lo, T hi) {
  ParallelRanges(0, n, n >= kParallelThreshold, [=](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      const T v = x[i] < lo ? lo : x[i];  // NaN < lo is false: NaN stays
      y[i] = v > hi ? hi : v;
    }
  });
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const ClampAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Clamp<T>(input.data_as<const T>(), output.data_as<T>(), input.numel(),
               static_cast<T>(attrs_.min), static_cast<T>(attrs_.max));
    });
  }

 private:
  ClampAttrs attrs_;
};

class Direct : public Algorithm<ClampAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const ClampAttrs& attrs,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<DirectKernel>(attrs);
  }
};

AI3_REGISTER_ALGORITHM(ClampAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
