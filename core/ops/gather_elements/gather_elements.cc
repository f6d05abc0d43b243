#include "core/ops/gather_elements/gather_elements.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

Shape GatherElementsAttrs::OutputShapeOf(const Shape& data,
                                         const Tensor& indices) const {
  if (indices.dtype != DType::kInt64) {
    Fail(ErrorKind::kDType, "the indices are ", Name(indices.dtype),
         "; gather_elements takes int64 indices");
  }
  CheckShape(data, "the data");
  CheckShape(indices.shape, "the indices");
  if (data.empty() || indices.shape.size() != data.size()) {
    Fail(ErrorKind::kShape, "the indices ", ToString(indices.shape),
         " must have the rank of the data ", ToString(data), " (>= 1)");
  }
  const int64_t a = DimOfAxis(axis, data);
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != a && indices.shape[d] > data[d]) {
      Fail(ErrorKind::kShape, "the indices ", ToString(indices.shape),
           " are larger than the data ", ToString(data), " on axis ", d);
    }
  }
  if (data[a] == 0 && NumElements(indices.shape) > 0) {
    Fail(ErrorKind::kShape, "gathers from the empty axis ", a, " of the data ",
         ToString(data));
  }
  return indices.shape;
}

}  // namespace ai3
