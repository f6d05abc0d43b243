#include "core/ops/roll/roll.h"

#include "core/errors.h"

namespace ai3 {

void RollAttrs::Validate(const std::vector<Tensor>& params) const {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument, "roll takes no parameter tensors, got ",
         params.size());
  }
  if (shifts.empty() || shifts.size() != axes.size()) {
    Fail(ErrorKind::kInvalidArgument,
         "shifts and axes must have one length >= 1, got ", shifts.size(),
         " shifts and ", axes.size(), " axes");
  }
}

std::vector<int64_t> RollAttrs::ShiftPerDim(const Shape& shape) const {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> shift(shape.size(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < -rank || axes[i] >= rank) {
      Fail(ErrorKind::kShape, "axis ", axes[i], " is out of range for a rank-",
           rank, " input ", ToString(shape));
    }
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (shape[a] == 0) continue;
    // Reduced before the sum, which could otherwise wrap for shifts near
    // the int64 limits; both terms are then in (-shape[a], shape[a]).
    shift[a] = ((shift[a] + shifts[i] % shape[a]) % shape[a] + shape[a]) %
               shape[a];
  }
  return shift;
}

Shape RollAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  ShiftPerDim(input.shape);
  return input.shape;
}

}  // namespace ai3
