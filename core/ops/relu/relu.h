// relu: y = max(x, 0) elementwise, NaN passing through as in PyTorch. No
// attributes and no weights: the input may have any shape (rank 0 included)
// and its dtype, float32 or float64, is the layer's.
#ifndef AI3_CORE_OPS_RELU_RELU_H_
#define AI3_CORE_OPS_RELU_RELU_H_

#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct ReluAttrs {
  static constexpr char kOp[] = "relu";

  // relu takes no parameter tensors.
  void Validate(const std::vector<Tensor>& params) const;
  // The input's shape: relu keeps it.
  Shape OutputShape(const Tensor& input) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_RELU_RELU_H_
