#include "core/ops/linear/linear.h"

#include <string>

#include "core/errors.h"

namespace ai3 {

void LinearAttrs::Validate(const std::vector<Tensor>& params) const {
  if (in_features < 1) {
    Fail(ErrorKind::kInvalidArgument, "in_features must be >= 1, got ",
         in_features);
  }
  if (out_features < 1) {
    Fail(ErrorKind::kInvalidArgument, "out_features must be >= 1, got ",
         out_features);
  }
  const std::string bad_activation = activation.WhyInvalid();
  if (!bad_activation.empty()) {
    Fail(ErrorKind::kInvalidArgument, bad_activation);
  }
  if (params.size() != (has_bias ? 2u : 1u)) {
    Fail(ErrorKind::kInvalidArgument, "expected ", has_bias ? 2 : 1,
         " parameter tensors (weight", has_bias ? ", bias" : "", "), got ",
         params.size());
  }
  const Shape want_weight = {out_features, in_features};
  if (params[0].shape != want_weight) {
    Fail(ErrorKind::kShape, "weight has shape ", ToString(params[0].shape),
         ", expected ", ToString(want_weight), " (out_features, in_features)");
  }
  if (has_bias && params[1].shape != Shape{out_features}) {
    Fail(ErrorKind::kShape, "bias has shape ", ToString(params[1].shape),
         ", expected (", out_features, ",)");
  }
  for (const Tensor& p : params) {
    if (p.dtype != dtype) {
      Fail(ErrorKind::kDType, "weights are ", Name(p.dtype), ", layer is ",
           Name(dtype));
    }
  }
}

Shape LinearAttrs::OutputShape(const Tensor& input) const {
  if (input.rank() < 1 || input.shape.back() != in_features) {
    Fail(ErrorKind::kShape, "expected an input of rank >= 1 whose last "
         "dimension is in_features=", in_features, ", got shape ",
         ToString(input.shape));
  }
  if (input.dtype != dtype) {
    Fail(ErrorKind::kDType, "input is ", Name(input.dtype),
         " but weights are ", Name(dtype));
  }
  CheckShape(input.shape, "input");
  Shape out = input.shape;
  out.back() = out_features;
  CheckShape(out, "output");  // out_features may exceed in_features
  return out;
}

}  // namespace ai3
