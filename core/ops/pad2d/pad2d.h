// pad2d: padding of the spatial dims of a rank-4 image tensor, as
// F.pad(x, (left, right, top, bottom), mode, value) on NCHW, nn.ZeroPad2d,
// nn.ConstantPad2d, nn.ReflectionPad2d, nn.ReplicationPad2d,
// nn.CircularPad2d, ONNX Pad and Keras ZeroPadding2D:
//   y[n, c, top + h, left + w] = x[n, c, h, w]; elsewhere, by `mode`,
//   constant:  `value`;
//   reflect:   the row/column mirrored about the edge, the edge not
//              repeated (torch "reflect", ONNX "reflect"; pads < that dim);
//   replicate: the edge row/column repeated (torch "replicate", ONNX "edge");
//   circular:  the tensor tiled (torch "circular", ONNX "wrap"; pads <= that
//              dim, as torch requires).
// No weights; the input's dtype, float32 or float64, is the layer's (value
// is rounded to it). Pads are >= 0 (negative pads, i.e. cropping, are not
// supported).
#ifndef AI3_CORE_OPS_PAD2D_PAD2D_H_
#define AI3_CORE_OPS_PAD2D_PAD2D_H_

#include <cstdint>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

enum class PadMode { kConstant, kReflect, kReplicate, kCircular };

// The input index that padded index i (in [-before, n + after)) reads along
// a dim of n >= 1 elements, for a mode other than constant; the pads are
// within what OutputShape allows for the mode, so it is in [0, n).
inline int64_t PadSourceIndex(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kReflect:
      return i < 0 ? -i : 2 * (n - 1) - i;
    case PadMode::kCircular:
      return i < 0 ? i + n : i - n;
    default:  // replicate
      return i < 0 ? 0 : n - 1;
  }
}

struct Pad2dAttrs {
  static constexpr char kOp[] = "pad2d";

  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  double value = 0.0;
  PadMode mode = PadMode::kConstant;
  Layout layout = Layout::kNCHW;

  // No parameter tensors; pads >= 0; value not NaN.
  void Validate(const std::vector<Tensor>& params) const;
  // A rank-4 input in `layout`; the output has H + top + bottom rows and
  // W + left + right columns. reflect needs each pad < its dim, circular
  // <= its dim.
  Shape OutputShape(const Tensor& input) const;
};

// pad2d_backward_data: dy with the padding cut away (constant mode: the
// padding's value is a constant, no gradient flows to it from x); in the
// other modes, each padded element's gradient is also added to the input
// element it copies.
struct Pad2dBackwardDataAttrs : DataGradientAttrs<Pad2dAttrs> {
  static constexpr char kOp[] = "pad2d_backward_data";
};

// Both layouts as a stack of planes of rows, each input row landing
// contiguously inside a wider output row:
//   NCHW: N*C planes of H rows of W elements;
//   NHWC: N planes of H rows of W*C elements (a pixel is C contiguous
//         elements, so the left/right pads are left*C / right*C elements).
// In elements; what the forward and its gradient walk.
struct Pad2dRows {
  int64_t planes, in_h, out_h, in_row, left, right, out_row;
};
inline Pad2dRows Pad2dRowsOf(const Pad2dAttrs& a, const ImageDims& d) {
  const bool nhwc = a.layout == Layout::kNHWC;
  const int64_t unit = nhwc ? d.c : 1;  // elements per pixel in a row
  const int64_t in_row = d.w * unit;
  return {nhwc ? d.n : d.n * d.c,
          d.h,
          d.h + a.pad_top + a.pad_bottom,
          in_row,
          a.pad_left * unit,
          a.pad_right * unit,
          (a.pad_left + a.pad_right) * unit + in_row};
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_PAD2D_PAD2D_H_
