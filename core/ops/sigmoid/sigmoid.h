// sigmoid: y = 1 / (1 + exp(-x)) elementwise (torch.sigmoid, nn.Sigmoid).
// No attributes and no weights: the input may have any shape (rank 0
// included) and its dtype, float32 or float64, is the layer's. NaN passes
// through as in PyTorch.
#ifndef AI3_CORE_OPS_SIGMOID_SIGMOID_H_
#define AI3_CORE_OPS_SIGMOID_SIGMOID_H_

#include "core/ops/elementwise.h"

namespace ai3 {

struct SigmoidAttrs : ElementwiseAttrs<SigmoidAttrs> {
  static constexpr char kOp[] = "sigmoid";
};

// sigmoid_backward_data: dx = dy * y * (1 - y), from y as torch's
// sigmoid_backward.
AI3_ELEMENTWISE_GRADIENT(Sigmoid, "sigmoid", dy*(T(1) - y) * y);

}  // namespace ai3

#endif  // AI3_CORE_OPS_SIGMOID_SIGMOID_H_
