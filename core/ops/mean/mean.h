// mean over a set of axes (torch.mean(x, dims, keepdim), ONNX ReduceMean,
// Keras GlobalAveragePooling / reduce_mean). `axes` in memory order,
// negative from the end, each at most once; empty means every axis.
// keepdim keeps the reduced axes as size 1. The mean of no elements is NaN,
// as in PyTorch. No weights.
#ifndef AI3_CORE_OPS_MEAN_MEAN_H_
#define AI3_CORE_OPS_MEAN_MEAN_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct MeanAttrs {
  static constexpr char kOp[] = "mean";
  static constexpr bool kRunsOnEmptyInput = true;  // NaN over no elements

  std::vector<int64_t> axes;
  bool keepdim = false;

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
  // Per input dimension: reduced or not; throws kShape for an axis out of
  // range or given twice.
  std::vector<bool> Reduced(const Shape& shape) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_MEAN_MEAN_H_
