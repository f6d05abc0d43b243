#include "core/ops/lrn/lrn.h"

#include <cmath>

#include "core/errors.h"

namespace ai3 {

void LrnAttrs::Validate(const std::vector<Tensor>& params) const {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument, "lrn takes no parameter tensors, got ",
         params.size());
  }
  if (size < 1) {
    Fail(ErrorKind::kInvalidArgument, "size must be >= 1, got ", size);
  }
  if (before < 0 || before >= size) {
    Fail(ErrorKind::kInvalidArgument,
         "before (the channels of the window "
         "before c) must be in [0, size = ",
         size, "), got ", before);
  }
  if (!std::isfinite(alpha) || !std::isfinite(beta) || !std::isfinite(bias)) {
    Fail(ErrorKind::kInvalidArgument,
         "alpha, beta and bias must be finite, "
         "got ",
         alpha, ", ", beta, ", ", bias);
  }
}

Shape LrnAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  if (input.rank() < 3) {
    Fail(ErrorKind::kShape, "expected an input of rank >= 3 (N, C, ...), got ",
         ToString(input.shape));
  }
  return input.shape;
}

}  // namespace ai3
