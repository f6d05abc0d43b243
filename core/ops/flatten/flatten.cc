#include "core/ops/flatten/flatten.h"

#include <algorithm>

#include "core/errors.h"

namespace ai3 {

void FlattenAttrs::Validate(const std::vector<Tensor>& params) const {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument,
         "flatten takes no parameter tensors, got ", params.size());
  }
}

Shape FlattenAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  // As PyTorch: a scalar has one addressable dimension, 0 (or -1).
  const int64_t rank = std::max<int64_t>(input.rank(), 1);
  auto wrap = [&](const char* what, int64_t dim) {
    if (dim < -rank || dim >= rank) {
      Fail(ErrorKind::kShape, what, "=", dim, " is out of range for an input",
           " of rank ", input.rank(), " ", ToString(input.shape),
           " (expected a dim in [", -rank, ", ", rank - 1, "])");
    }
    return dim < 0 ? dim + rank : dim;
  };
  const int64_t start = wrap("start_dim", start_dim);
  const int64_t end = wrap("end_dim", end_dim);
  if (start > end) {
    Fail(ErrorKind::kShape, "start_dim=", start_dim,
         " comes after end_dim=", end_dim, " for an input of rank ",
         input.rank(), " ", ToString(input.shape));
  }
  if (input.rank() == 0) return {1};
  Shape out(input.shape.begin(), input.shape.begin() + start);
  int64_t merged = 1;
  for (int64_t i = start; i <= end; ++i) merged *= input.shape[i];
  out.push_back(merged);
  out.insert(out.end(), input.shape.begin() + end + 1, input.shape.end());
  return out;
}

}  // namespace ai3
