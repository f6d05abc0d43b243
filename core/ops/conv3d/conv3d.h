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

#include "core/errors.h"
#include "core/math/epilogue.h"
#include "core/ops/backward.h"
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

// [lo, hi): the taps t of a spatial dim whose input position (output
// position o) lies inside the input.
inline void TapRange(const Conv3dGeometry& g, int dim, int64_t o, int64_t* lo,
                     int64_t* hi) {
  *lo = 0;
  *hi = g.kernel[dim];
  while (*lo < *hi && InputPosition(g, dim, o, *lo) < 0) ++*lo;
  while (*hi > *lo && InputPosition(g, dim, o, *hi - 1) >= g.in[dim]) --*hi;
}

// Calls fn(output offset, input offset, tap) for every output position of
// one image and channel and each of its taps inside the input: the offsets
// from the image's and channel's first element, the tap (q, r, s) as the
// index (q * kh + r) * kw + s of the weight's kernel. The gradients' walk.
template <class Fn>
void ForEachOutputTap(const Conv3dGeometry& g, const Fn& fn) {
  for (int64_t z = 0; z < g.out[0]; ++z) {
    int64_t q0, q1;
    TapRange(g, 0, z, &q0, &q1);
    for (int64_t i = 0; i < g.out[1]; ++i) {
      int64_t r0, r1;
      TapRange(g, 1, i, &r0, &r1);
      for (int64_t j = 0; j < g.out[2]; ++j) {
        int64_t s0, s1;
        TapRange(g, 2, j, &s0, &s1);
        const int64_t out = z * g.y_step[0] + i * g.y_step[1] + j * g.y_step[2];
        for (int64_t q = q0; q < q1; ++q) {
          const int64_t xq = InputPosition(g, 0, z, q) * g.x_step[0];
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t xr = xq + InputPosition(g, 1, i, r) * g.x_step[1];
            const int64_t tap = (q * g.kernel[1] + r) * g.kernel[2];
            for (int64_t s = s0; s < s1; ++s) {
              fn(out, xr + InputPosition(g, 2, j, s) * g.x_step[2], tap + s);
            }
          }
        }
      }
    }
  }
}

// conv3d's gradients (backward_*.cc, the backward contract of
// core/ops/backward.h): its attributes and weights, inputs [dy, x, y];
// output x's shape, the weight's or the bias's. A fused activation is
// refused: the frontends train unfused layers (fusion is swap_backend's,
// for inference).
template <GradientTarget kTarget>
struct Conv3dGradientAttrs : GradientAttrs<Conv3dAttrs> {
  static constexpr const char* kOp =
      GradientOpName(kTarget, "conv3d_backward_data", "conv3d_backward_weight",
                     "conv3d_backward_bias");

  void Validate(const std::vector<Tensor>& params) const {
    Conv3dAttrs::Validate(params);
    if (activation.enabled) {
      Fail(ErrorKind::kInvalidArgument,
           "the conv3d gradients take no fused activation; run it as its own "
           "layer");
    }
    if (kTarget == GradientTarget::kBias && !has_bias) {
      Fail(ErrorKind::kInvalidArgument,
           "a conv3d without a bias has no bias "
           "gradient");
    }
  }

  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    this->CheckGradientInputs(inputs);
    if (kTarget == GradientTarget::kData) return inputs[kForwardInput].shape;
    if (kTarget == GradientTarget::kWeight) {
      return {out_channels, in_channels / groups, kernel[0], kernel[1],
              kernel[2]};
    }
    return {out_channels};
  }
};
using Conv3dBackwardDataAttrs = Conv3dGradientAttrs<GradientTarget::kData>;
using Conv3dBackwardWeightAttrs = Conv3dGradientAttrs<GradientTarget::kWeight>;
using Conv3dBackwardBiasAttrs = Conv3dGradientAttrs<GradientTarget::kBias>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV3D_CONV3D_H_
