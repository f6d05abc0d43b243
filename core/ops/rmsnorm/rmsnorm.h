// rmsnorm: root-mean-square normalisation over the last `axes` dims
// (nn.RMSNorm, F.rms_norm, ONNX RMSNormalization):
//   y = x / sqrt(mean(x^2) + eps) * weight
// per leading index; weight optional, shaped like the normalised dims.
// Its attributes are layernorm's (axes, eps, the weight's shape and dtype,
// the same checks: layernorm.h) without a bias.
#ifndef AI3_CORE_OPS_RMSNORM_RMSNORM_H_
#define AI3_CORE_OPS_RMSNORM_RMSNORM_H_

#include <vector>

#include "core/errors.h"
#include "core/ops/layernorm/layernorm.h"

namespace ai3 {

struct RmsNormAttrs : LayerNormAttrs {
  static constexpr char kOp[] = "rmsnorm";

  void Validate(const std::vector<Tensor>& params) const {
    if (has_bias) {
      Fail(ErrorKind::kInvalidArgument, "rmsnorm takes no bias");
    }
    LayerNormAttrs::Validate(params);
  }
};

// The gradients (core/ops/backward.h), layernorm's without the mean, with
// xhat = x * rstd per row:
//   rmsnorm_backward_data:   g = dy * weight (dy without one), then
//                            dx = rstd (g - xhat mean(g xhat))
//   rmsnorm_backward_weight: sum over the rows of dy xhat (needs the weight)
struct RmsNormBackwardDataAttrs : DataGradientAttrs<RmsNormAttrs> {
  static constexpr char kOp[] = "rmsnorm_backward_data";
};
struct RmsNormBackwardWeightAttrs : NormParamGradientAttrs<RmsNormAttrs> {
  static constexpr char kOp[] = "rmsnorm_backward_weight";
  void Validate(const std::vector<Tensor>& params) const {
    RmsNormAttrs::Validate(params);
    CheckHas(has_weight, "weight");
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_RMSNORM_RMSNORM_H_
