// pool3d: max and average pooling over the three spatial dims of a rank-5
// video or volume tensor (NCDHW, or NDHWC in channels-last models), with
// PyTorch's semantics as pool2d has them (output sizes, ceil_mode,
// padding at most half the kernel, average divisors): torch MaxPool3d /
// AvgPool3d, ONNX MaxPool / AveragePool of rank 5, Keras MaxPooling3D /
// AveragePooling3D. Two ops, each its own layer kind:
//   MaxPool3dAttrs  "maxpool3d"
//   AvgPool3dAttrs  "avgpool3d"
// No weights; the dtype, float32 or float64, is the input's.
#ifndef AI3_CORE_OPS_POOL3D_POOL3D_H_
#define AI3_CORE_OPS_POOL3D_POOL3D_H_

#include <array>
#include <cstdint>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

// The sliding window both pools share; triples are (d, h, w).
struct Pool3dWindow {
  std::vector<int64_t> kernel{1, 1, 1};
  std::vector<int64_t> stride{1, 1, 1};
  // (front, back, top, bottom, left, right), each at most half the kernel.
  std::vector<int64_t> padding{0, 0, 0, 0, 0, 0};
  std::vector<int64_t> dilation{1, 1, 1};
  bool ceil_mode = false;
  Layout layout = Layout::kNCHW;

  void ValidateWindow() const;
  // Checks a rank-5 input with non-empty channel and spatial dims and
  // returns the output shape; kShape when the window leaves no output.
  Shape WindowOutputShape(const Tensor& input) const;
};

struct MaxPool3dAttrs : Pool3dWindow {
  static constexpr char kOp[] = "maxpool3d";

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

struct AvgPool3dAttrs : Pool3dWindow {
  static constexpr char kOp[] = "avgpool3d";

  // Whether padded positions count in the divisor (PyTorch's default: yes).
  bool count_include_pad = true;
  // If > 0, every window's sum is divided by this instead; 0 means none.
  int64_t divisor_override = 0;

  // As Pool3dWindow, and dilation must be 1.
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

// Their input gradients (core/ops/backward.h): maxpool3d's goes to the
// first maximum of each window in window order (a NaN wins, a later NaN
// over an earlier one), as PyTorch's; avgpool3d's spreads dy / divisor
// over each window's taps.
struct MaxPool3dBackwardDataAttrs : DataGradientAttrs<MaxPool3dAttrs> {
  static constexpr char kOp[] = "maxpool3d_backward_data";
};
struct AvgPool3dBackwardDataAttrs : DataGradientAttrs<AvgPool3dAttrs> {
  static constexpr char kOp[] = "avgpool3d_backward_data";
};

// Everything a kernel needs to index one call: sizes, and the element
// strides of an image, a channel and each spatial dim of the input (x*)
// and output (y*) in the layer's layout.
struct Pool3dGeometry {
  int64_t n, c;
  std::array<int64_t, 3> in, out, kernel, stride, pad_before, pad_after,
      dilation;
  int64_t x_image, x_channel, y_image, y_channel;
  std::array<int64_t, 3> x_step, y_step;
};
Pool3dGeometry Pool3dGeometryOf(const Pool3dWindow& window,
                                const Shape& input_shape);

}  // namespace ai3

#endif  // AI3_CORE_OPS_POOL3D_POOL3D_H_
