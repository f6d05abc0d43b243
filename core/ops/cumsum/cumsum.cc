#include "core/ops/cumsum/cumsum.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

void CumsumAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
}

Shape CumsumAttrs::OutputShape(const Tensor& input) const {
  if (!IsFloat(input.dtype) && input.dtype != DType::kInt64) {
    Fail(ErrorKind::kDType, "the input is ", Name(input.dtype),
         "; cumsum takes float32, float64 or int64");
  }
  CheckShape(input.shape, "input");
  if (input.shape.empty()) {
    Fail(ErrorKind::kShape, "cumsum needs an input of rank >= 1, got a scalar");
  }
  DimOfAxis(axis, input.shape);
  return input.shape;
}

}  // namespace ai3
