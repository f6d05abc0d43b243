// relu: y = max(x, 0) elementwise, NaN passing through as in PyTorch. No
// attributes and no weights: the input may have any shape (rank 0 included)
// and its dtype, float32 or float64, is the layer's.
#ifndef AI3_CORE_OPS_RELU_RELU_H_
#define AI3_CORE_OPS_RELU_RELU_H_

#include "core/ops/elementwise.h"

namespace ai3 {

struct ReluAttrs : ElementwiseAttrs<ReluAttrs> {
  static constexpr char kOp[] = "relu";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_RELU_RELU_H_
