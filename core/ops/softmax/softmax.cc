#include "core/ops/softmax/softmax.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

void SoftmaxAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
}

SoftmaxAttrs::Split SoftmaxAttrs::SplitOf(const Shape& shape) const {
  const int64_t rank = static_cast<int64_t>(shape.size());
  // Like PyTorch, a rank-0 tensor takes axis 0 or -1.
  const int64_t span = rank == 0 ? 1 : rank;
  if (axis < -span || axis >= span) {
    Fail(ErrorKind::kShape, "axis ", axis, " is out of range for a rank-", rank,
         " input ", ToString(shape), " (expected ", -span, " to ", span - 1,
         ")");
  }
  if (rank == 0) return Split{1, 1, 1};
  const int64_t a = axis < 0 ? axis + rank : axis;
  return Split{DimsProduct(shape, 0, a), shape[a],
               DimsProduct(shape, a + 1, rank)};
}

Shape SoftmaxAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  SplitOf(input.shape);
  return input.shape;
}

}  // namespace ai3
