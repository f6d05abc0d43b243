// layernorm: normalisation over the last `axes` dimensions (nn.LayerNorm,
// F.layer_norm, ONNX LayerNormalization with a trailing axis, Keras
// LayerNormalization over trailing axes):
//   y = (x - mean) / sqrt(var + eps) * weight + bias
// with mean and (biased) var over those dimensions, per leading index.
// weight and bias are optional (ones / zeros without them); when present
// they are shaped like the normalised dimensions. Their dtype is the
// layer's.
#ifndef AI3_CORE_OPS_LAYERNORM_LAYERNORM_H_
#define AI3_CORE_OPS_LAYERNORM_LAYERNORM_H_

#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct LayerNormAttrs {
  static constexpr char kOp[] = "layernorm";

  int64_t axes = 1;  // trailing dims normalised
  double eps = 1e-5;
  bool has_weight = false;
  bool has_bias = false;
  DType dtype = DType::kFloat32;
  // The normalised dims when known from the weights (else any).
  Shape normalized_shape;

  // params: weight if has_weight, then bias if has_bias.
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

// The normalised size D (the product of the trailing `axes` dims) of x
// (layernorm's and rmsnorm's rows).
inline int64_t NormalizedSize(const Shape& x, int64_t axes) {
  int64_t d = 1;
  for (size_t i = x.size() - axes; i < x.size(); ++i) d *= x[i];
  return d;
}

// The gradients (core/ops/backward.h; the weights are the forward's), with
// xhat = (x - mean) * rstd per row as the forward computes it:
//   layernorm_backward_data:   g = dy * weight (dy without one), then
//                              dx = rstd (g - mean(g) - xhat mean(g xhat))
//   layernorm_backward_weight: sum over the rows of dy xhat
//   layernorm_backward_bias:   sum over the rows of dy
// A weight's or the bias's gradient needs the layer to have that weight.
struct LayerNormBackwardDataAttrs : DataGradientAttrs<LayerNormAttrs> {
  static constexpr char kOp[] = "layernorm_backward_data";
};
// Shaped like the normalised dims (layernorm's and rmsnorm's).
template <class Norm>
struct NormParamGradientAttrs : GradientAttrs<Norm> {
  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    this->CheckGradientInputs(inputs);
    const Shape& x = inputs[kForwardInput].shape;
    return Shape(x.end() - this->axes, x.end());
  }
  void CheckHas(bool present, const char* what) const {
    if (!present) {
      Fail(ErrorKind::kInvalidArgument, "the layer has no ", what,
           " to take the gradient of");
    }
  }
};
struct LayerNormBackwardWeightAttrs : NormParamGradientAttrs<LayerNormAttrs> {
  static constexpr char kOp[] = "layernorm_backward_weight";
  void Validate(const std::vector<Tensor>& params) const {
    LayerNormAttrs::Validate(params);
    CheckHas(has_weight, "weight");
  }
};
struct LayerNormBackwardBiasAttrs : NormParamGradientAttrs<LayerNormAttrs> {
  static constexpr char kOp[] = "layernorm_backward_bias";
  void Validate(const std::vector<Tensor>& params) const {
    LayerNormAttrs::Validate(params);
    CheckHas(has_bias, "bias");
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_LAYERNORM_LAYERNORM_H_
