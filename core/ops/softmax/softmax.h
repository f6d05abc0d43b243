// softmax along one axis, numerically stable (the axis's max is subtracted
// before exponentiating), as F.softmax(x, dim=axis):
//   y[..., k, ...] = exp(x[..., k, ...] - m) / sum_j exp(x[..., j, ...] - m)
// with m the max over the axis. No weights: the input may have any rank
// (rank 0 is one element, axis 0 or -1) and its dtype, float32 or float64,
// is the layer's. `axis` counts in memory order; negative counts from the
// end.
#ifndef AI3_CORE_OPS_SOFTMAX_SOFTMAX_H_
#define AI3_CORE_OPS_SOFTMAX_SOFTMAX_H_

#include <cstdint>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct SoftmaxAttrs {
  static constexpr char kOp[] = "softmax";

  int64_t axis = -1;

  // The input viewed as [outer, axis, inner].
  struct Split {
    int64_t outer, axis, inner;
  };

  // softmax takes no parameter tensors.
  void Validate(const std::vector<Tensor>& params) const;
  // The input's shape, once `axis` is in range for its rank.
  Shape OutputShape(const Tensor& input) const;
  // `shape` as [outer, axis, inner]; throws kShape when axis is out of
  // range for its rank.
  Split SplitOf(const Shape& shape) const;
};

// softmax_backward_data: dx = y (dy - sum over the axis of dy y), from y
// as torch's _softmax_backward_data.
struct SoftmaxBackwardDataAttrs : DataGradientAttrs<SoftmaxAttrs> {
  static constexpr char kOp[] = "softmax_backward_data";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_SOFTMAX_SOFTMAX_H_
