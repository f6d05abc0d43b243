// rmsnorm "direct": one task per normalised row of D elements (split over
// OpenMP threads when there is enough work): the row's mean square,
// accumulated in double, then y = x * rstd * weight, vectorised.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/layernorm/norm_gradients.h"
#include "core/ops/rmsnorm/rmsnorm.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 14;

template <typename T>
void RmsNorm(const T* x, T* y, int64_t rows, int64_t d, double eps,
             const T* weight) {
  ParallelFor(0, rows, rows * d >= kParallelThreshold, [&](int64_t r) {
    const T* __restrict xr = x + r * d;
    T* __restrict yr = y + r * d;
    double sq = 0;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < d; ++i) sq += double(xr[i]) * xr[i];
    const T rstd = T(1.0 / std::sqrt(sq / double(d) + eps));
    if (weight) {
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * rstd * weight[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * rstd;
    }
  });
}

class DirectKernel : public Kernel {
 public:
  DirectKernel(const RmsNormAttrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs), weight_(attrs.has_weight ? params[0].data : nullptr) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const int64_t d = NormalizedSize(input.shape, attrs_.axes);
    if (d == 0) return;
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      RmsNorm<T>(input.data_as<const T>(), output.data_as<T>(),
                 input.numel() / d, d, attrs_.eps,
                 static_cast<const T*>(weight_));
    });
  }

 private:
  RmsNormAttrs attrs_;
  const void* weight_;
};

AI3_REGISTER_ALGORITHM(RmsNormAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<RmsNormAttrs, DirectKernel>);

// The gradients' "direct"s: layernorm's kernels without the mean
// (core/ops/layernorm/norm_gradients.h).
AI3_REGISTER_ALGORITHM(RmsNormBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<RmsNormBackwardDataAttrs,
                                       NormDataKernel</*kCentered=*/false>>);
AI3_REGISTER_ALGORITHM(
    RmsNormBackwardWeightAttrs, "direct", Device::kCPU,
    KernelAlgorithm<RmsNormBackwardWeightAttrs,
                    ColumnSumKernel</*kXhat=*/true, /*kCentered=*/false>>);

}  // namespace
}  // namespace ai3
