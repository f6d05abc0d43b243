#include "core/ops/reshape/reshape.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

void ReshapeAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
  int inferred = 0;
  for (int64_t d : shape) {
    if (d < -1) {
      Fail(ErrorKind::kInvalidArgument, "target shape ", ToString(shape),
           " has a dimension below -1");
    }
    inferred += d == -1;
  }
  if (inferred > 1) {
    Fail(ErrorKind::kInvalidArgument, "target shape ", ToString(shape),
         " has more than one -1");
  }
}

Shape ReshapeAttrs::OutputShape(const Tensor& input) const {
  const int64_t numel = CheckShape(input.shape, "input");
  Shape out = shape;
  int64_t known = 1;
  bool has_zero = false;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0) {
      if (i >= input.shape.size()) {
        Fail(ErrorKind::kShape, "target shape ", ToString(shape),
             " copies dimension ", i, " (0) but the input ",
             ToString(input.shape), " has rank ", input.rank());
      }
      out[i] = input.shape[i];
    }
    if (out[i] == -1) {
      infer_at = static_cast<int>(i);
    } else if (out[i] != 0) {
      // Zeros are left out of the product until the end, so a target such
      // as (2^62, 4, 0) is refused as too large instead of wrapping to 0.
      if (out[i] > kMaxElements / known) {
        Fail(ErrorKind::kShape, "target shape ", ToString(shape),
             " is too large: its size in bytes would overflow int64");
      }
      known *= out[i];
    } else {
      has_zero = true;
    }
  }
  if (has_zero) known = 0;
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0) {
      Fail(ErrorKind::kShape, "cannot reshape input ", ToString(input.shape),
           " (", numel, " elements) to ", ToString(shape),
           ": the known dimensions do not divide the element count");
    }
    out[infer_at] = numel / known;
  } else if (known != numel) {
    Fail(ErrorKind::kShape, "cannot reshape input ", ToString(input.shape),
         " (", numel, " elements) to ", ToString(shape), " (", known,
         " elements)");
  }
  return out;
}

}  // namespace ai3
