// conv3d: the 3-D convolution of video and volumetric models (torch
// nn.Conv3d / F.conv3d, ONNX Conv of rank 5, Keras Conv3D),
//   y[n, g*kg + o, z, i, j] = bias[g*kg + o]
//       + sum over c < cg, q < kd, r < kh, s < kw of
//         x[n, g*cg + c, z*sd - pd + q*dd, i*sh - ph + r*dh, j*sw - pw + s*dw]
//         * W[g*kg + o, c, q, r, s]
// with zeros outside the input. Weights are (out, in / groups, kd, kh, kw)
// (PyTorch's and ONNX's OIDHW); the data is NCDHW (layout "NCHW": channels
// at dim 1) or NDHWC (layout "NHWC": channels last, as Keras holds it).
#ifndef AI3_CORE_OPS_CONV3D_CONV3D_H_
#define AI3_CORE_OPS_CONV3D_CONV3D_H_

#include <array>
#include <cstdint>
#include <vector>

#include "core/math/epilogue.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

struct Conv3dAttrs {
  static constexpr char kOp[] = "conv3d";

  int64_t in_channels = 0;
  int64_t out_channels = 0;
  std::array<int64_t, 3> kernel{1, 1, 1};  // (d, h, w), from the weight
  std::vector<int64_t> stride{1, 1, 1};    // (d, h, w)
  // Zeros before and after each spatial dim: (front, back, top, bottom,
  // left, right); asymmetric pads come from ONNX's and Keras' "same".
  std::vector<int64_t> padding{0, 0, 0, 0, 0, 0};
  std::vector<int64_t> dilation{1, 1, 1};  // (d, h, w)
  int64_t groups = 1;
  bool has_bias = false;
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;
  // A fused activation every algorithm applies to its output
  // (core/math/epilogue.h), as conv2d's.
  Activation activation;

  // Checks the attributes and the weights: params = {weight[, bias]}.
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

// Everything an algorithm needs to index one call: sizes, and element
// strides of the input (x*) and output (y*) in the layer's layout.
struct Conv3dGeometry {
  int64_t n, c, groups, cg, kg, k;
  std::array<int64_t, 3> in, out, kernel, stride, pad, dilation;  // (d, h, w)
  // Element strides of an image, a channel and each spatial dim.
  int64_t x_image, x_channel, y_image, y_channel;
  std::array<int64_t, 3> x_step, y_step;
  int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  int64_t out_volume() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_volume() const { return kernel[0] * kernel[1] * kernel[2]; }
};
// For an input shape OutputShape accepted; allocates nothing (it runs on
// every forward pass).
Conv3dGeometry GeometryOf(const Conv3dAttrs& attrs, const Shape& input_shape);

// The input positions output position `o` of a spatial dim reads through
// kernel tap `t`: o * stride - pad + t * dilation, in [0, size) or not.
inline int64_t InputPosition(const Conv3dGeometry& g, int dim, int64_t o,
                             int64_t t) {
  return o * g.stride[dim] - g.pad[dim] + t * g.dilation[dim];
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV3D_CONV3D_H_
