// silu: y = x * sigmoid(x) = x / (1 + exp(-x)) elementwise (F.silu, nn.SiLU,
// Keras swish). No attributes and no weights: the input may have any shape
// (rank 0 included) and its dtype, float32 or float64, is the layer's. NaN
// passes through as in PyTorch.
#ifndef AI3_CORE_OPS_SILU_SILU_H_
#define AI3_CORE_OPS_SILU_SILU_H_

#include "core/ops/elementwise.h"

namespace ai3 {

struct SiluAttrs : ElementwiseAttrs<SiluAttrs> {
  static constexpr char kOp[] = "silu";
};

// silu_backward_data: dy * d/dx (x sigmoid(x)) (backward_direct.cc).
struct SiluBackwardDataAttrs : DataGradientAttrs<SiluAttrs> {
  static constexpr char kOp[] = "silu_backward_data";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_SILU_SILU_H_
