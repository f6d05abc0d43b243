#include "core/ops/gather/gather.h"

#include <string>

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

void GatheringAttrs::ValidateData(const char* op, const char* what,
                                  const std::vector<Tensor>& params) const {
  CheckConstantOperand(op, has_other, other_shape, other_dtype, params,
                       (std::string(what) + " gathered from").c_str());
  if (has_other) CheckShape(other_shape, what);
}

Shape GatherAttrs::OutputShapeOf(const Shape& data,
                                 const Tensor& indices) const {
  if (indices.dtype != DType::kInt64) {
    Fail(ErrorKind::kDType, "the indices are ", Name(indices.dtype),
         "; gather takes int64 indices");
  }
  CheckShape(data, "the data");
  CheckShape(indices.shape, "the indices");
  if (data.empty()) {
    Fail(ErrorKind::kShape, "gather needs data of rank >= 1, got a scalar");
  }
  const int64_t a = DimOfAxis(axis, data);
  Shape out(data.begin(), data.begin() + a);
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), data.begin() + a + 1, data.end());
  CheckShape(out, "the output");
  return out;
}

void CheckIndicesInRange(const int64_t* indices, int64_t count, int64_t axis,
                         int64_t size, const Shape& data) {
  for (int64_t j = 0; j < count; ++j) {
    if (indices[j] < -size || indices[j] >= size) {
      Fail(ErrorKind::kInvalidArgument, "index ", indices[j], " (at ", j,
           " of the indices) is out of range for axis ", axis, " of size ",
           size, " in data ", ToString(data));
    }
  }
}

}  // namespace ai3
