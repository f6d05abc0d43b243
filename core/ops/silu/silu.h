// silu: y = x * sigmoid(x) = x / (1 + exp(-x)) elementwise (F.silu, nn.SiLU, Keras swish).
// No attributes and no weights: the input may have any shape (rank 0
// included) and its dtype, float32 or float64, is the layer's. NaN passes
// through as in PyTorch.
#ifndef AI3_CORE_OPS_SILU_SILU_H_
#define AI3_CORE_OPS_SILU_SILU_H_

#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct SiluAttrs {
  static constexpr char kOp[] = "silu";

  // silu takes no parameter tensors.
  void Validate(const std::vector<Tensor>& params) const;
  // The input's shape: silu keeps it.
  Shape OutputShape(const Tensor& input) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_SILU_SILU_H_
