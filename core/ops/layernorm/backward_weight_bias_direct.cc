// layernorm_backward_weight and layernorm_backward_bias "direct", one
// kernel: for each normalised position i, the sum over the rows of dy[r, i]
// xhat[r, i] (the weight's: kCentered) or of dy[r, i] (the bias's), accumulated
// in double. The weight's first computes every row's mean and rstd (RowStatsOf,
// as the forward) into the workspace, rows split over threads; then threads
// take blocks of positions, the block the vectorised loop, so each owns its
// sums.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/backward.h"
#include "core/ops/layernorm/layernorm.h"
#include "core/ops/layernorm/row_stats_kernel.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <bool kCentered>
class ColumnSumKernel : public MultiInputKernel {
 public:
  explicit ColumnSumKernel(const LayerNormAttrs& attrs) : attrs_(attrs) {}

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    if (!kCentered) return 0;
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
    if constexpr (kCentered) {
      const T eps = T(attrs_.eps);
      ParallelFor(0, rows, parallel,
                  [&](int64_t r) { stats[r] = RowStatsOf(x + r * d, d, eps); });
    }
    const int64_t blocks = (d + kBlock - 1) / kBlock;
    ParallelFor(0, blocks, parallel && blocks > 1, [&](int64_t b) {
      const int64_t i0 = b * kBlock, width = std::min(kBlock, d - i0);
      double acc[kBlock] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const T* __restrict g = dy + r * d + i0;
        const T* __restrict v = x + r * d + i0;
        if constexpr (kCentered) {
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

// "direct" of the weight (kCentered) or bias gradient `Attrs`.
template <class Attrs, bool kCentered>
using ColumnSumDirect = KernelAlgorithm<Attrs, ColumnSumKernel<kCentered>>;

AI3_REGISTER_ALGORITHM(LayerNormBackwardWeightAttrs, "direct", Device::kCPU,
                       ColumnSumDirect<LayerNormBackwardWeightAttrs,
                                       /*kCentered=*/true>);
AI3_REGISTER_ALGORITHM(LayerNormBackwardBiasAttrs, "direct", Device::kCPU,
                       ColumnSumDirect<LayerNormBackwardBiasAttrs,
                                       /*kCentered=*/false>);

}  // namespace
}  // namespace ai3
