// "direct" of every reduction (mean.h): the input, walked in blocks of kept
// and reduced dims (reduce_walk.h), is read once, in order, as rows of its
// innermost block: a reduced innermost block folds along the row into one
// output element, a kept one folds the row into a run of outputs (both
// vectorised where the fold is a sum or a product). Each output then gets
// its finish (mean: / count, l2: sqrt, ...). When the outermost block is
// kept, its indices own disjoint outputs and are split over OpenMP
// threads. log_sum_exp is two such passes: the maximum m into the output,
// then sum exp(x - m) into the workspace, y = m + log(sum).
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/mean/mean.h"
#include "core/ops/mean/reduce_walk.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

using reduce::Blocks;
using reduce::FoldInto;
using reduce::kMaxBlocks;
using reduce::MakeBlocks;

template <Reduction R, typename T>
void Reduce(const Blocks& b, const T* x, T* y, T* workspace, int64_t in_numel,
            int64_t out_numel) {
  using F = reduce::Fold<R, T>;
  const T scale = T(1) / T(b.reduce_count);  // mean: inf for none, so NaN
  if constexpr (R == Reduction::kLogSumExp) {
    FoldInto<Reduction::kMax, T>(b, x, y, nullptr, in_numel, out_numel);
    // The maximum as the shift; 0 where it is not finite (all -inf: the
    // sum is 0, log -inf; an inf or NaN: it comes through exp).
    for (int64_t i = 0; i < out_numel; ++i) {
      if (!std::isfinite(y[i])) y[i] = T(0);
    }
    FoldInto<R, T>(b, x, workspace, y, in_numel, out_numel);
    for (int64_t i = 0; i < out_numel; ++i) {
      y[i] = F::Finish(workspace[i], scale, y[i]);
    }
  } else {
    FoldInto<R, T>(b, x, y, nullptr, in_numel, out_numel);
    if constexpr (R == Reduction::kMean || R == Reduction::kL2) {
#pragma omp simd
      for (int64_t i = 0; i < out_numel; ++i) {
        y[i] = F::Finish(y[i], scale, T(0));
      }
    }
  }
}

template <class Attrs>
class ReduceKernel : public Kernel {
 public:
  explicit ReduceKernel(const Attrs& attrs) : attrs_(attrs) {}

  // log_sum_exp's sums, one per output, of the widest dtype.
  size_t WorkspaceBytes(const Shape& input_shape) const override {
    if (Attrs::kReduction != Reduction::kLogSumExp) return 0;
    const Shape out =
        attrs_.OutputShape(Tensor{nullptr, DType::kFloat64, input_shape});
    return static_cast<size_t>(NumElements(out)) * sizeof(double);
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    if (input.rank() > kMaxBlocks) {
      Fail(ErrorKind::kUnsupported, Attrs::kOp, " 'direct' takes up to ",
           kMaxBlocks, " dimensions, got ", input.rank());
    }
    const Blocks b = MakeBlocks(input.shape, attrs_.Reduced(input.shape));
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Reduce<Attrs::kReduction, T>(
          b, input.data_as<const T>(), output.data_as<T>(),
          static_cast<T*>(workspace), input.numel(), output.numel());
    });
  }

 private:
  Attrs attrs_;
};

template <class Attrs>
using Direct = KernelAlgorithm<Attrs, ReduceKernel<Attrs>>;

AI3_REGISTER_ALGORITHM(MeanAttrs, "direct", Device::kCPU, Direct<MeanAttrs>);
AI3_REGISTER_ALGORITHM(ReduceSumAttrs, "direct", Device::kCPU,
                       Direct<ReduceSumAttrs>);
AI3_REGISTER_ALGORITHM(ReduceProdAttrs, "direct", Device::kCPU,
                       Direct<ReduceProdAttrs>);
AI3_REGISTER_ALGORITHM(ReduceMaxAttrs, "direct", Device::kCPU,
                       Direct<ReduceMaxAttrs>);
AI3_REGISTER_ALGORITHM(ReduceMinAttrs, "direct", Device::kCPU,
                       Direct<ReduceMinAttrs>);
AI3_REGISTER_ALGORITHM(ReduceL1Attrs, "direct", Device::kCPU,
                       Direct<ReduceL1Attrs>);
AI3_REGISTER_ALGORITHM(ReduceL2Attrs, "direct", Device::kCPU,
                       Direct<ReduceL2Attrs>);
AI3_REGISTER_ALGORITHM(ReduceSumSquareAttrs, "direct", Device::kCPU,
                       Direct<ReduceSumSquareAttrs>);
AI3_REGISTER_ALGORITHM(ReduceLogSumExpAttrs, "direct", Device::kCPU,
                       Direct<ReduceLogSumExpAttrs>);

}  // namespace
}  // namespace ai3
