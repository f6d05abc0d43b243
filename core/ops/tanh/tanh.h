// tanh: y = tanh(x) elementwise (torch.tanh, nn.Tanh).
// No attributes and no weights: the input may have any shape (rank 0
// included) and its dtype, float32 or float64, is the layer's. NaN passes
// through as in PyTorch.
#ifndef AI3_CORE_OPS_TANH_TANH_H_
#define AI3_CORE_OPS_TANH_TANH_H_

#include "core/ops/elementwise.h"

namespace ai3 {

struct TanhAttrs : ElementwiseAttrs<TanhAttrs> {
  static constexpr char kOp[] = "tanh";
};

// tanh_backward_data: dx = dy * (1 - y^2), from y as torch's tanh_backward.
AI3_ELEMENTWISE_GRADIENT(Tanh, "tanh", dy*(T(1) - y * y));

}  // namespace ai3

#endif  // AI3_CORE_OPS_TANH_TANH_H_
