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

}  // namespace ai3

#endif  // AI3_CORE_OPS_LAYERNORM_LAYERNORM_H_
