#include "core/ops/clamp/clamp.h"

#include <cmath>

#include "core/errors.h"

namespace ai3 {

void ClampAttrs::Validate(const std::vector<Tensor>& params) const {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument,
         "clamp takes no parameter tensors, got ", params.size());
  }
  if (std::isnan(min) || std::isnan(max)) {
    Fail(ErrorKind::kInvalidArgument, "clamp bounds must not be NaN, got min ",
         min, " and max ", max);
  }
}

Shape ClampAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  return input.shape;
}

}  // namespace ai3
