#include "core/ops/layernorm/layernorm.h"

#include <cmath>

#include "core/errors.h"

namespace ai3 {

void LayerNormAttrs::Validate(const std::vector<Tensor>& params) const {
  if (axes < 1) {
    Fail(ErrorKind::kInvalidArgument,
         "axes (the number of trailing dims "
         "normalised) must be >= 1, got ",
         axes);
  }
  if (!(eps >= 0) || !std::isfinite(eps)) {
    Fail(ErrorKind::kInvalidArgument, "eps must be finite and >= 0, got ", eps);
  }
  const size_t want = size_t(has_weight) + size_t(has_bias);
  if (params.size() != want) {
    Fail(ErrorKind::kInvalidArgument, "expected ", want,
         " parameter tensors (weight and/or bias), got ", params.size());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const char* what = has_weight && i == 0 ? "weight" : "bias";
    if (params[i].rank() != axes) {
      Fail(ErrorKind::kShape, what, " has shape ", ToString(params[i].shape),
           " but the layer normalises ", axes, " trailing dims");
    }
    if (params[i].shape != params[0].shape) {
      Fail(ErrorKind::kShape, "weight ", ToString(params[0].shape),
           " and bias ", ToString(params[i].shape), " differ in shape");
    }
    if (params[i].shape != normalized_shape) {
      Fail(ErrorKind::kInternal, what, " is ", ToString(params[i].shape),
           " but the attributes say ", ToString(normalized_shape));
    }
    if (params[i].dtype != dtype) {
      Fail(ErrorKind::kDType, what, " is ", Name(params[i].dtype),
           ", layer is ", Name(dtype));
    }
  }
}

Shape LayerNormAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  if (input.rank() < axes) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape),
         " has fewer than the ", axes, " dims the layer normalises");
  }
  if (!normalized_shape.empty()) {
    const Shape tail(input.shape.end() - axes, input.shape.end());
    if (tail != normalized_shape) {
      Fail(ErrorKind::kShape, "input ", ToString(input.shape), " ends in ",
           ToString(tail), " but the weights are shaped ",
           ToString(normalized_shape));
    }
  }
  if ((has_weight || has_bias) && input.dtype != dtype) {
    Fail(ErrorKind::kDType, "input is ", Name(input.dtype), " but weights are ",
         Name(dtype));
  }
  return input.shape;
}

}  // namespace ai3
