// layernorm "direct": one task per normalised row of D = prod(trailing dims)
// elements: the row's mean and rstd (RowStatsOf, row_stats_kernel.h), then a
// pass writing (x - mean) * rstd * weight + bias. Rows are split over OpenMP threads when
// there is enough work.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/layernorm/layernorm.h"
#include "core/ops/layernorm/row_stats_kernel.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 14;

template <typename T>
void LayerNorm(const T* x, T* y, int64_t rows, int64_t d, T eps,
               const T* weight, const T* bias) {
  ParallelFor(0, rows, rows * d >= kParallelThreshold, [&](int64_t r) {
    const T* __restrict xr = x + r * d;
    T* __restrict yr = y + r * d;
    const auto [mean, rstd] = RowStatsOf(xr, d, eps);
    if (weight && bias) {
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) {
        yr[i] = (xr[i] - mean) * rstd * weight[i] + bias[i];
      }
    } else if (weight) {
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mean) * rstd * weight[i];
    } else if (bias) {
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mean) * rstd + bias[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mean) * rstd;
    }
  });
}

class DirectKernel : public Kernel {
 public:
  DirectKernel(const LayerNormAttrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs) {
    size_t next = 0;
    if (attrs.has_weight) weight_ = params[next++].data;
    if (attrs.has_bias) bias_ = params[next++].data;
  }

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const int64_t d = NormalizedSize(input.shape, attrs_.axes);
    if (d == 0) return;
    const int64_t rows = input.numel() / d;
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      LayerNorm<T>(input.data_as<const T>(), output.data_as<T>(), rows, d,
                   T(attrs_.eps), static_cast<const T*>(weight_),
                   static_cast<const T*>(bias_));
    });
  }

 private:
  LayerNormAttrs attrs_;
  const void* weight_ = nullptr;
  const void* bias_ = nullptr;
};

AI3_REGISTER_ALGORITHM(LayerNormAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<LayerNormAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
