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

// hardswish_backward_data, as torch's hardswish_backward: 0 below x = -3,
// dy (x / 3 + 1/2) from -3 to 3 (both ends included), dy above (and for
// NaN, which compares false).
struct HardswishBackwardDataAttrs : DataGradientAttrs<HardswishAttrs> {
  static constexpr char kOp[] = "hardswish_backward_data";
};
struct HardswishGradFn {
  explicit HardswishGradFn(const HardswishAttrs&) {}
  template <typename T>
  T operator()(T dy, T x, T) const {
    const T inside = dy * (x / T(3) + T(0.5));
    return x < T(-3) ? T(0) : (x <= T(3) ? inside : dy);
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_HARDSWISH_HARDSWISH_H_
