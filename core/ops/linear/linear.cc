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
  ValidateWeightBias(params, has_bias, {out_features, in_features},
                     "(out_features, in_features)", dtype);
}

Shape LinearAttrs::OutputShape(const Tensor& input) const {
  if (input.rank() < 1 || input.shape.back() != in_features) {
    Fail(ErrorKind::kShape,
         "expected an input of rank >= 1 whose last "
         "dimension is in_features=",
         in_features, ", got shape ", ToString(input.shape));
  }
  ValidateInputDType(input, dtype);
  CheckShape(input.shape, "input");
  Shape out = input.shape;
  out.back() = out_features;
  CheckShape(out, "output");  // out_features may exceed in_features
  return out;
}

}  // namespace ai3
