// layernorm_backward_data "direct": one task per normalised row, as the
// forward: the row's statistics (RowStatsOf), a pass summing g = dy * weight
// and g xhat, and one writing dx = rstd (g - mean(g) - xhat mean(g xhat)),
// each vectorised; rows split over OpenMP threads when there is enough work.
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/layernorm/layernorm.h"
#include "core/ops/layernorm/row_stats_kernel.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 14;

template <typename T>
void RowGradients(const T* dy, const T* x, T* dx, int64_t rows, int64_t d,
                  T eps, const T* weight) {
  ParallelFor(0, rows, rows * d >= kParallelThreshold, [&](int64_t r) {
    const T* __restrict dyr = dy + r * d;
    const T* __restrict xr = x + r * d;
    T* __restrict dxr = dx + r * d;
    const auto [mean, rstd] = RowStatsOf(xr, d, eps);
    T sum_g = 0, sum_gx = 0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
    for (int64_t i = 0; i < d; ++i) {
      const T g = weight ? dyr[i] * weight[i] : dyr[i];
      sum_g += g;
      sum_gx += g * (xr[i] - mean) * rstd;
    }
    const T mean_g = sum_g / T(d), mean_gx = sum_gx / T(d);
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) {
      const T g = weight ? dyr[i] * weight[i] : dyr[i];
      dxr[i] = rstd * (g - mean_g - (xr[i] - mean) * rstd * mean_gx);
    }
  });
}

class DataKernel : public MultiInputKernel {
 public:
  DataKernel(const LayerNormAttrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs), weight_(attrs.has_weight ? params[0].data : nullptr) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const int64_t d = NormalizedSize(output.shape, attrs_.axes);
    const int64_t rows = output.numel() / d;  // d > 0: output is not empty
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      RowGradients<T>(inputs[kGradOutput].data_as<const T>(),
                      inputs[kForwardInput].data_as<const T>(),
                      output.data_as<T>(), rows, d, T(attrs_.eps),
                      static_cast<const T*>(weight_));
    });
  }

 private:
  LayerNormAttrs attrs_;
  const void* weight_;
};

AI3_REGISTER_ALGORITHM(LayerNormBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<LayerNormBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
