// batchnorm2d: inference-time batch normalisation of a rank-4 image tensor,
// as nn.BatchNorm2d in eval mode (F.batch_norm with training=False), and of
// any other rank >= 2 with channels at dim 1 (NCHW models) or last (NHWC):
// BatchNorm1d's (N, C) and (N, C, L), BatchNorm3d's (N, C, D, H, W):
//   y[n, c, h, w] = (x[n, c, h, w] - running_mean[c])
//                   / sqrt(running_var[c] + eps) * weight[c] + bias[c]
// params = {weight (gamma), bias (beta), running_mean, running_var}, each
// [channels] and of the layer's dtype. Frontends pass ones/zeros for a layer
// without affine parameters. An optional fused activation (as conv2d's,
// core/math/epilogue.h) is applied as each element is written: DenseNet's
// pre-activation BN -> ReLU in one pass (frontends/ai3/fusion.py).
#ifndef AI3_CORE_OPS_BATCHNORM2D_BATCHNORM2D_H_
#define AI3_CORE_OPS_BATCHNORM2D_BATCHNORM2D_H_

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/math/epilogue.h"
#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct BatchNorm2dAttrs {
  static constexpr char kOp[] = "batchnorm2d";

  int64_t channels = 0;
  double eps = 1e-5;  // nn.BatchNorm2d's default
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;
  // y = act(x * scale + shift); none by default. The gradients refuse one
  // (they are the affine map's).
  Activation activation;

  // The order of the parameter tensors.
  enum Param { kWeight = 0, kBias = 1, kRunningMean = 2, kRunningVar = 3 };

  // channels >= 1, eps finite and >= 0, a valid activation, and four
  // [channels] parameter tensors of `dtype`.
  void Validate(const std::vector<Tensor>& params) const;
  // A rank-4 input of `dtype` with `channels` channels; the output has its
  // shape.
  Shape OutputShape(const Tensor& input) const;

  // The per-channel affine map inference batch normalisation is, folded
  // from the four (validated) parameter tensors once, in double and then
  // rounded to `dtype`:
  //   scale = weight / sqrt(running_var + eps),  shift = bias - mean * scale
  // as scale[channels] then shift[channels], of `dtype` (what every
  // algorithm runs, CPU or GPU).
  Buffer FoldScaleShift(const std::vector<Tensor>& params) const;

  // Validate, and no fused activation: for the gradients, which are the
  // affine map's (kInvalidArgument naming the activation otherwise).
  void ValidateWithoutActivation(const std::vector<Tensor>& params) const;
};

// The gradients of that affine map, y = x * scale + shift per channel
// (core/ops/backward.h; the weights are the forward's four):
//   batchnorm2d_backward_data:   dx = dy * scale
//   batchnorm2d_backward_weight: d weight[c] = sum over (n, h, w) of
//       dy (x - running_mean[c]) / sqrt(running_var[c] + eps)
//   batchnorm2d_backward_bias:   d bias[c] = sum over (n, h, w) of dy
// Training-mode batch normalisation (batch statistics) is not this op: the
// frontends run the framework's own layer for it.
struct BatchNorm2dBackwardDataAttrs : DataGradientAttrs<BatchNorm2dAttrs> {
  static constexpr char kOp[] = "batchnorm2d_backward_data";
  void Validate(const std::vector<Tensor>& params) const {
    ValidateWithoutActivation(params);
  }
};
// A gradient shaped like the (channels,) weights.
struct BatchNorm2dParamGradientAttrs : GradientAttrs<BatchNorm2dAttrs> {
  void Validate(const std::vector<Tensor>& params) const {
    ValidateWithoutActivation(params);
  }
  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    CheckGradientInputs(inputs);
    return {channels};
  }
};
struct BatchNorm2dBackwardWeightAttrs : BatchNorm2dParamGradientAttrs {
  static constexpr char kOp[] = "batchnorm2d_backward_weight";
};
struct BatchNorm2dBackwardBiasAttrs : BatchNorm2dParamGradientAttrs {
  static constexpr char kOp[] = "batchnorm2d_backward_bias";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_BATCHNORM2D_BATCHNORM2D_H_
