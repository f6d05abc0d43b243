#include "core/ops/roll/roll.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

void RollAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
  if (shifts.empty() || shifts.size() != axes.size()) {
    Fail(ErrorKind::kInvalidArgument,
         "shifts and axes must have one length >= 1, got ", shifts.size(),
         " shifts and ", axes.size(), " axes");
  }
}

std::vector<int64_t> RollAttrs::ShiftPerDim(const Shape& shape) const {
  std::vector<int64_t> shift(shape.size(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = DimOfAxis(axes[i], shape);
    if (shape[a] == 0) continue;
    // Reduced before the sum, which could otherwise wrap for shifts near
    // the int64 limits; both terms are then in (-shape[a], shape[a]).
    shift[a] =
        ((shift[a] + shifts[i] % shape[a]) % shape[a] + shape[a]) % shape[a];
  }
  return shift;
}

Shape RollAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  ShiftPerDim(input.shape);
  return input.shape;
}

}  // namespace ai3
