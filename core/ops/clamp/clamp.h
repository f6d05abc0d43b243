// clamp: y = min(max(x, min), max) elementwise, as torch.clamp: serves
// nn.ReLU6 (0, 6), nn.Hardtanh (min_val, max_val) and Keras ReLU(max_value).
// NaN passes through; min > max gives max everywhere, as in PyTorch. No
// weights: the input may have any shape (rank 0 included) and its dtype,
// float32 or float64, is the layer's.
#ifndef AI3_CORE_OPS_CLAMP_CLAMP_H_
#define AI3_CORE_OPS_CLAMP_CLAMP_H_

#include <limits>
#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct ClampAttrs {
  static constexpr char kOp[] = "clamp";

  // The bounds; +-infinity leaves that side open. Rounded to the input's
  // dtype when the layer runs.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();

  // No parameter tensors, and bounds that are not NaN.
  void Validate(const std::vector<Tensor>& params) const;
  // The input's shape: clamp keeps it.
  Shape OutputShape(const Tensor& input) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_CLAMP_CLAMP_H_
