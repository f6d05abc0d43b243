#include "core/ops/topk/topk.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

Shape TopkAttrs::OutputShape(const Tensor& input) const {
  if (!IsFloat(input.dtype) && input.dtype != DType::kInt64) {
    Fail(ErrorKind::kDType, "the input is ", Name(input.dtype),
         "; topk takes float32, float64 or int64");
  }
  CheckShape(input.shape, "input");
  if (input.shape.empty()) {
    Fail(ErrorKind::kShape, "topk needs an input of rank >= 1, got a scalar");
  }
  const int64_t d = DimOfAxis(axis, input.shape);
  if (k < 0 || k > input.shape[d]) {
    Fail(ErrorKind::kInvalidArgument, "k = ", k, " along axis ", axis, " of ",
         ToString(input.shape), "; it must be in [0, ", input.shape[d], "]");
  }
  Shape out = input.shape;
  out[d] = k;
  return out;
}

}  // namespace ai3
