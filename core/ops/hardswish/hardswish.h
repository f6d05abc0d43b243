// hardswish: y = x * clamp(x + 3, 0, 6) / 6 elementwise (nn.Hardswish, ONNX
// HardSwish, keras hard_swish). No weights; any shape; float32 or float64
// from the input; NaN passes through.
#ifndef AI3_CORE_OPS_HARDSWISH_HARDSWISH_H_
#define AI3_CORE_OPS_HARDSWISH_HARDSWISH_H_

#include "core/ops/elementwise.h"

namespace ai3 {

struct HardswishAttrs : ElementwiseAttrs<HardswishAttrs> {
  static constexpr char kOp[] = "hardswish";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_HARDSWISH_HARDSWISH_H_
