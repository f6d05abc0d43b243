#include "core/ops/groupnorm/groupnorm.h"

#include <cmath>

#include "core/errors.h"

namespace ai3 {

void GroupNormAttrs::Validate(const std::vector<Tensor>& params) const {
  if (groups < 0) {
    Fail(ErrorKind::kInvalidArgument,
         "groups must be >= 1 (or 0: one per channel), got ", groups);
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
    if (params[i].shape != Shape{channels}) {
      Fail(ErrorKind::kShape, what, " has shape ", ToString(params[i].shape),
           ", expected (", channels, ",) (one per channel)");
    }
    if (params[i].dtype != dtype) {
      Fail(ErrorKind::kDType, what, " is ", Name(params[i].dtype),
           ", layer is ", Name(dtype));
    }
  }
  if (channels > 0 && groups > 0 && channels % groups) {
    Fail(ErrorKind::kInvalidArgument, "groups=", groups, " must divide the ",
         channels, " channels");
  }
}

GroupNormDims GroupNormDimsOf(const Shape& shape, Layout layout) {
  const int64_t c = layout == Layout::kNHWC ? shape.back() : shape[1];
  const int64_t n = shape[0];
  const int64_t s = c * n == 0 ? 0 : NumElements(shape) / (n * c);
  return {n, c, s};
}

Shape GroupNormAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  if (input.rank() < 2) {
    Fail(ErrorKind::kShape, "expected an input of rank >= 2 (N, C, ...), got ",
         ToString(input.shape));
  }
  if ((has_weight || has_bias) && input.dtype != dtype) {
    Fail(ErrorKind::kDType, "input is ", Name(input.dtype), " but weights are ",
         Name(dtype));
  }
  const int64_t c = GroupNormDimsOf(input.shape, layout).c;
  if (channels > 0 && c != channels) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") has ", c, " channels, the weights ", channels);
  }
  if (groups > 0 && c % groups) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") has ", c, " channels, not divisible into ", groups, " groups");
  }
  return input.shape;
}

}  // namespace ai3
