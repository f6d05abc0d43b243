// conv_transpose2d: the 2-D transposed convolution ("deconvolution";
// torch nn.ConvTranspose2d, Keras Conv2DTranspose, ONNX ConvTranspose),
//   y[n, g*og + o, ih*sh - pt + r*dh, iw*sw - pl + s*dw]
//       += x[n, g*cg + c, ih, iw] * W[g*cg + c, o, r, s]   (+ bias[o]),
// with the output (H - 1)*sh - pt - pb + (kh - 1)*dh + 1 + output_padding_h
// rows (likewise columns). Weights are [in_channels, out_channels / groups,
// kh, kw] (PyTorch's and ONNX's layout); either data layout.
//
// That is exactly the data gradient of the conv2d from y's shape to x's
// (in_channels = this one's out_channels and the other way round, the same
// kernel, stride, dilation, groups and weight tensor), whose bottom/right
// pads are pb - output_padding_h / pr - output_padding_w (the output rows
// output_padding adds are ones that conv2d's windows never reach). Each
// algorithm of this op is one of conv2d_backward_data's kernels run on that
// conv2d (data_gradient_kernel.h), plus the bias; see direct.cc, gemm.cc and
// zero_insert.cc.
#ifndef AI3_CORE_OPS_CONV_TRANSPOSE2D_CONV_TRANSPOSE2D_H_
#define AI3_CORE_OPS_CONV_TRANSPOSE2D_CONV_TRANSPOSE2D_H_

#include <cstdint>
#include <vector>

#include "core/ops/backward.h"
#include "core/ops/conv2d/backward/gradient_kernel.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/tensor.h"

namespace ai3 {

struct ConvTranspose2dAttrs {
  static constexpr char kOp[] = "conv_transpose2d";

  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  // What the output loses at each side (torch's / ONNX's pads).
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  // Rows / columns added at the bottom / right (torch: < stride or <
  // dilation; ONNX's output_shape may ask for more: rows no input
  // reaches).
  int64_t output_padding_h = 0, output_padding_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool has_bias = false;
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;

  // Checks the attributes and the weights: params = {weight[, bias]}.
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;

  // The conv2d whose data gradient this is (above); its input is this
  // op's output and its output this op's input.
  Conv2dAttrs DataGradientOf() const;
};

// conv_transpose2d's gradients, each on the conv2d C this op is the data
// gradient of (DataGradientOf; via_conv2d_kernel.h): the input gradient is
// C's forward on dy (backward_data.cc), the weight gradient C's weight
// gradient with dy as C's input and x as its output's gradient
// (backward_weight.cc), the bias gradient dy summed per channel
// (backward_bias.cc). Output: x's shape, the weight's or the bias's.
template <GradientTarget kTarget>
struct ConvTranspose2dGradientAttrs : GradientAttrs<ConvTranspose2dAttrs> {
  static constexpr const char* kOp = GradientOpName(
      kTarget, "conv_transpose2d_backward_data",
      "conv_transpose2d_backward_weight", "conv_transpose2d_backward_bias");

  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    this->CheckGradientInputs(inputs);
    if (kTarget == GradientTarget::kData) return inputs[kForwardInput].shape;
    if (kTarget == GradientTarget::kWeight) {
      return {in_channels, out_channels / groups, kernel_h, kernel_w};
    }
    return {out_channels};
  }
};
using ConvTranspose2dBackwardDataAttrs =
    ConvTranspose2dGradientAttrs<GradientTarget::kData>;
using ConvTranspose2dBackwardWeightAttrs =
    ConvTranspose2dGradientAttrs<GradientTarget::kWeight>;
using ConvTranspose2dBackwardBiasAttrs =
    ConvTranspose2dGradientAttrs<GradientTarget::kBias>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV_TRANSPOSE2D_CONV_TRANSPOSE2D_H_
