#include "core/ops/argmax/argmax.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

Shape ArgExtremeAxis::OutputShapeOf(const char* op, const Tensor& input) const {
  if (!IsFloat(input.dtype) && input.dtype != DType::kInt64) {
    Fail(ErrorKind::kDType, "the input is ", Name(input.dtype), "; ", op,
         " takes float32, float64 or int64");
  }
  CheckShape(input.shape, "input");
  if (input.shape.empty()) {
    Fail(ErrorKind::kShape, op, " needs an input of rank >= 1, got a scalar");
  }
  const int64_t d = DimOfAxis(axis, input.shape);
  if (input.shape[d] == 0) {
    Fail(ErrorKind::kShape, op, " along axis ", axis, " of ",
         ToString(input.shape), ": the axis is empty, so there is no index");
  }
  Shape out = input.shape;
  if (keepdim) {
    out[d] = 1;
  } else {
    out.erase(out.begin() + d);
  }
  return out;
}

}  // namespace ai3
