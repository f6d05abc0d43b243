// groupnorm: normalisation over groups of channels (nn.GroupNorm,
// F.group_norm, ONNX GroupNormalization, Keras GroupNormalization) and, as
// the case groups = C, instance normalisation (nn.InstanceNorm1d/2d/3d,
// F.instance_norm, ONNX InstanceNormalization): for each image n and group
// g of C / groups consecutive channels,
//   y = (x - mean) / sqrt(var + eps) * weight[c] + bias[c]
// with mean and (biased) var over the group's channels and every spatial
// position. The input is (N, C, *) (NCHW: channels at dim 1, any rank >= 2)
// or (N, *, C) (NHWC: channels last). weight and bias are optional, each
// (C,) (ones / zeros without them), of the layer's dtype.
#ifndef AI3_CORE_OPS_GROUPNORM_GROUPNORM_H_
#define AI3_CORE_OPS_GROUPNORM_GROUPNORM_H_

#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct GroupNormAttrs {
  static constexpr char kOp[] = "groupnorm";

  int64_t groups = 1;    // 0: one group per channel (instance norm)
  int64_t channels = 0;  // from the weights; 0 (none): any
  double eps = 1e-5;
  bool has_weight = false;
  bool has_bias = false;
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;

  // params: weight if has_weight, then bias if has_bias, each (C,).
  void Validate(const std::vector<Tensor>& params) const;
  // Rank >= 2; C (dim 1, or the last in NHWC) divisible by groups.
  Shape OutputShape(const Tensor& input) const;
};

// The (N, C, S) view of an input: images, channels, spatial positions.
struct GroupNormDims {
  int64_t n, c, s;
};
GroupNormDims GroupNormDimsOf(const Shape& shape, Layout layout);

// The gradients (core/ops/backward.h; the weights are the forward's), with
// xhat = (x - mean) * rstd per (image, group) as the forward computes it,
// backward_direct.cc:
//   groupnorm_backward_data:   g = dy * weight[c] (dy without one), then
//                              dx = rstd (g - mean(g) - xhat mean(g xhat))
//                              over the group
//   groupnorm_backward_weight: per channel, the sum of dy xhat over the
//                              images and positions
//   groupnorm_backward_bias:   per channel, the sum of dy
// A weight's or the bias's gradient needs the layer to have that weight.
struct GroupNormBackwardDataAttrs : DataGradientAttrs<GroupNormAttrs> {
  static constexpr char kOp[] = "groupnorm_backward_data";
};
// Shaped (C,).
struct GroupNormParamGradientAttrs : GradientAttrs<GroupNormAttrs> {
  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    CheckGradientInputs(inputs);
    return {GroupNormDimsOf(inputs[kForwardInput].shape, layout).c};
  }
  void CheckHas(bool present, const char* what) const {
    if (!present) {
      Fail(ErrorKind::kInvalidArgument, "the layer has no ", what,
           " to take the gradient of");
    }
  }
};
struct GroupNormBackwardWeightAttrs : GroupNormParamGradientAttrs {
  static constexpr char kOp[] = "groupnorm_backward_weight";
  void Validate(const std::vector<Tensor>& params) const {
    GroupNormAttrs::Validate(params);
    CheckHas(has_weight, "weight");
  }
};
struct GroupNormBackwardBiasAttrs : GroupNormParamGradientAttrs {
  static constexpr char kOp[] = "groupnorm_backward_bias";
  void Validate(const std::vector<Tensor>& params) const {
    GroupNormAttrs::Validate(params);
    CheckHas(has_bias, "bias");
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_GROUPNORM_GROUPNORM_H_
