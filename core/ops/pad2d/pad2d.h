// pad2d: constant padding of the spatial dims of a rank-4 image tensor, as
// F.pad(x, (left, right, top, bottom), value=value) on NCHW, nn.ZeroPad2d,
// nn.ConstantPad2d and Keras ZeroPadding2D:
//   y[n, c, top + h, left + w] = x[n, c, h, w], `value` everywhere else.
// No weights; the input's dtype, float32 or float64, is the layer's (value
// is rounded to it). Pads are >= 0 (negative pads, i.e. cropping, are not
// supported).
#ifndef AI3_CORE_OPS_PAD2D_PAD2D_H_
#define AI3_CORE_OPS_PAD2D_PAD2D_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct Pad2dAttrs {
  static constexpr char kOp[] = "pad2d";

  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  double value = 0.0;
  Layout layout = Layout::kNCHW;

  // No parameter tensors; pads >= 0; value not NaN.
  void Validate(const std::vector<Tensor>& params) const;
  // A rank-4 input in `layout`; the output has H + top + bottom rows and
  // W + left + right columns.
  Shape OutputShape(const Tensor& input) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_PAD2D_PAD2D_H_
