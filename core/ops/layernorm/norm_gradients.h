// The kernels of layernorm's gradients, and of rmsnorm's (kCentered false:
// statistics without the mean, RowStatsOf), with xhat = (x - mean) * rstd per
// row as the forward computes it:
//   NormDataKernel: one task per normalised row: the row's statistics, a
//     pass summing g = dy * weight and g xhat, and one writing
//     dx = rstd (g - mean(g) - xhat mean(g xhat)) (rmsnorm: without mean(g)),
//     each vectorised; rows split over OpenMP threads when there is enough
//     work.
//   ColumnSumKernel: for each normalised position i, the sum over the rows
//     of dy[r, i] xhat[r, i] (a weight's: kXhat) or of dy[r, i] (a bias's),
//     accumulated in double. The weight's first computes every row's
//     statistics into the workspace, rows split over threads; then threads
//     take blocks of positions, the block the vectorised loop, so each owns
//     its sums.
#ifndef AI3_CORE_OPS_LAYERNORM_NORM_GRADIENTS_H_
#define AI3_CORE_OPS_LAYERNORM_NORM_GRADIENTS_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/backward.h"
#include "core/ops/layernorm/layernorm.h"
#include "core/ops/layernorm/row_stats_kernel.h"
#include "core/parallel.h"

namespace ai3 {

template <bool kCentered>
class NormDataKernel : public MultiInputKernel {
 public:
  NormDataKernel(const LayerNormAttrs& attrs, const std::vector<Tensor>& params)
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
  static constexpr int64_t kParallelThreshold = 1 << 14;

  template <typename T>
  static void RowGradients(const T* dy, const T* x, T* dx, int64_t rows,
                           int64_t d, T eps, const T* weight) {
    ParallelFor(0, rows, rows * d >= kParallelThreshold, [&](int64_t r) {
      const T* __restrict dyr = dy + r * d;
      const T* __restrict xr = x + r * d;
      T* __restrict dxr = dx + r * d;
      const auto [mean, rstd] = RowStatsOf<T, kCentered>(xr, d, eps);
      T sum_g = 0, sum_gx = 0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
      for (int64_t i = 0; i < d; ++i) {
        const T g = weight ? dyr[i] * weight[i] : dyr[i];
        sum_g += g;
        sum_gx += g * (xr[i] - mean) * rstd;
      }
      const T mean_g = kCentered ? sum_g / T(d) : T(0);
      const T mean_gx = sum_gx / T(d);
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) {
        const T g = weight ? dyr[i] * weight[i] : dyr[i];
        dxr[i] = rstd * (g - mean_g - (xr[i] - mean) * rstd * mean_gx);
      }
    });
  }

  LayerNormAttrs attrs_;
  const void* weight_;
};

template <bool kXhat, bool kCentered = true>
class ColumnSumKernel : public MultiInputKernel {
 public:
  explicit ColumnSumKernel(const LayerNormAttrs& attrs) : attrs_(attrs) {}

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    if (!kXhat) return 0;
    const Tensor& x = inputs[kForwardInput];
    const int64_t d = NormalizedSize(x.shape, attrs_.axes);
    return d == 0 ? 0 : 2 * (x.numel() / d) * SizeOf(x.dtype);
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    const int64_t d = output.numel();
    const int64_t rows = inputs[kForwardInput].numel() / d;
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      Sums(inputs[kGradOutput].data_as<const T>(),
           inputs[kForwardInput].data_as<const T>(), output.data_as<T>(), rows,
           d, static_cast<RowStats<T>*>(workspace));
    });
  }

 private:
  static constexpr int64_t kBlock = 256;
  static constexpr int64_t kParallelThreshold = 1 << 14;

  template <typename T>
  void Sums(const T* dy, const T* x, T* out, int64_t rows, int64_t d,
            RowStats<T>* stats) const {
    const bool parallel = rows * d >= kParallelThreshold;
    if constexpr (kXhat) {
      const T eps = T(attrs_.eps);
      ParallelFor(0, rows, parallel, [&](int64_t r) {
        stats[r] = RowStatsOf<T, kCentered>(x + r * d, d, eps);
      });
    }
    const int64_t blocks = (d + kBlock - 1) / kBlock;
    ParallelFor(0, blocks, parallel && blocks > 1, [&](int64_t b) {
      const int64_t i0 = b * kBlock, width = std::min(kBlock, d - i0);
      double acc[kBlock] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const T* __restrict g = dy + r * d + i0;
        const T* __restrict v = x + r * d + i0;
        if constexpr (kXhat) {
          const T mean = stats[r].mean, rstd = stats[r].rstd;
#pragma omp simd
          for (int64_t i = 0; i < width; ++i) {
            acc[i] += double(g[i]) * ((v[i] - mean) * rstd);
          }
        } else {
          (void)v;
#pragma omp simd
          for (int64_t i = 0; i < width; ++i) acc[i] += g[i];
        }
      }
      for (int64_t i = 0; i < width; ++i) out[i0 + i] = static_cast<T>(acc[i]);
    });
  }

  LayerNormAttrs attrs_;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_LAYERNORM_NORM_GRADIENTS_H_
