// The reductions over a set of axes, one design for the family:
//   mean               (torch.mean, ONNX ReduceMean, Keras
//   GlobalAveragePooling) reduce_sum         (torch.sum, ONNX ReduceSum)
//   reduce_prod        (torch.prod, ONNX ReduceProd)
//   reduce_max/min     (torch.amax/amin, ONNX ReduceMax/Min; NaN wins)
//   reduce_l1, reduce_l2, reduce_sum_square  (sum |x|, sqrt(sum x^2), sum x^2)
//   reduce_log_sum_exp (torch.logsumexp, ONNX ReduceLogSumExp; computed
//                       around the maximum, so it does not overflow)
// `axes` in memory order, negative from the end, each at most once; empty
// means every axis (ONNX's noop_with_empty_axes is the frontend's identity).
// keepdim keeps the reduced axes as size 1. Over no elements: mean NaN (as
// PyTorch), sum 0, prod 1, max -inf, min +inf, log_sum_exp -inf, as ONNX
// defines them. No weights.
#ifndef AI3_CORE_OPS_MEAN_MEAN_H_
#define AI3_CORE_OPS_MEAN_MEAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

enum class Reduction {
  kMean,
  kSum,
  kProd,
  kMax,
  kMin,
  kL1,
  kL2,
  kSumSquare,
  kLogSumExp
};

// Each reduction's op name and its input gradient's, in Reduction's order.
struct ReductionOpNames {
  const char* op;
  const char* gradient;
};
inline constexpr ReductionOpNames kReductionOpNames[] = {
    {"mean", "mean_backward_data"},
    {"reduce_sum", "reduce_sum_backward_data"},
    {"reduce_prod", "reduce_prod_backward_data"},
    {"reduce_max", "reduce_max_backward_data"},
    {"reduce_min", "reduce_min_backward_data"},
    {"reduce_l1", "reduce_l1_backward_data"},
    {"reduce_l2", "reduce_l2_backward_data"},
    {"reduce_sum_square", "reduce_sum_square_backward_data"},
    {"reduce_log_sum_exp", "reduce_log_sum_exp_backward_data"}};
static_assert(sizeof(kReductionOpNames) / sizeof(kReductionOpNames[0]) ==
                  static_cast<size_t>(Reduction::kLogSumExp) + 1,
              "one pair of names per Reduction");

constexpr const char* ReductionName(Reduction r) {
  return kReductionOpNames[static_cast<int>(r)].op;
}

// What every reduction's attributes are, whatever it computes.
struct ReduceAxes {
  static constexpr bool kRunsOnEmptyInput = true;  // see above

  std::vector<int64_t> axes;
  bool keepdim = false;

  Shape OutputShape(const Tensor& input) const;
  // Per input dimension: reduced or not; throws kShape for an axis out of
  // range or given twice.
  std::vector<bool> Reduced(const Shape& shape) const;
};

template <Reduction R>
struct ReduceAttrs : ReduceAxes {
  static constexpr const char* kOp = ReductionName(R);
  static constexpr Reduction kReduction = R;
  void Validate(const std::vector<Tensor>& params) const;
};

// <reduction>_backward_data: x's shape, dy of the output each element folds
// into times that output's derivative in the element (backward_direct.cc).
template <Reduction R>
struct ReduceBackwardDataAttrs : DataGradientAttrs<ReduceAttrs<R>> {
  static constexpr const char* kOp =
      kReductionOpNames[static_cast<int>(R)].gradient;
};

using MeanAttrs = ReduceAttrs<Reduction::kMean>;
using ReduceSumAttrs = ReduceAttrs<Reduction::kSum>;
using ReduceProdAttrs = ReduceAttrs<Reduction::kProd>;
using ReduceMaxAttrs = ReduceAttrs<Reduction::kMax>;
using ReduceMinAttrs = ReduceAttrs<Reduction::kMin>;
using ReduceL1Attrs = ReduceAttrs<Reduction::kL1>;
using ReduceL2Attrs = ReduceAttrs<Reduction::kL2>;
using ReduceSumSquareAttrs = ReduceAttrs<Reduction::kSumSquare>;
using ReduceLogSumExpAttrs = ReduceAttrs<Reduction::kLogSumExp>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_MEAN_MEAN_H_
