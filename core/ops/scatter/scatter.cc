#include "core/ops/scatter/scatter.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

void ScatteringAttrs::ValidateIndices(const char* op,
                                      const std::vector<Tensor>& params) const {
  CheckConstantOperand(op, has_other, other_shape, other_dtype, params,
                       "the indices");
  if (has_other) {
    CheckShape(other_shape, "the indices");
    if (other_dtype != DType::kInt64) {
      Fail(ErrorKind::kDType, "the indices are ", Name(other_dtype), "; ", op,
           " takes int64 indices");
    }
  }
}

void ScatteringAttrs::CheckOperands(const char* op,
                                    const std::vector<Tensor>& inputs) const {
  const Tensor& data = inputs[0];
  const Tensor& updates = inputs.back();
  if (!has_other && inputs[1].dtype != DType::kInt64) {
    Fail(ErrorKind::kDType, "the indices are ", Name(inputs[1].dtype), "; ", op,
         " takes int64 indices");
  }
  if (updates.dtype != data.dtype) {
    Fail(ErrorKind::kDType, "the updates are ", Name(updates.dtype),
         " but the data ", Name(data.dtype), "; ", op,
         " takes updates of the data's dtype");
  }
  if (reduction != ScatterReduction::kNone && data.dtype == DType::kBool) {
    Fail(ErrorKind::kDType, op,
         " combines bool data only with reduction \"none\"");
  }
  CheckShape(data.shape, "the data");
  CheckShape(IndicesShape(inputs), "the indices");
  CheckShape(updates.shape, "the updates");
}

Shape ScatterElementsAttrs::OutputShape(
    const std::vector<Tensor>& inputs) const {
  CheckOperands(kOp, inputs);
  const Shape& data = inputs[0].shape;
  const Shape& indices = IndicesShape(inputs);
  const Shape& updates = inputs.back().shape;
  if (data.empty() || indices.size() != data.size()) {
    Fail(ErrorKind::kShape, "the indices ", ToString(indices),
         " must have the rank of the data ", ToString(data), " (>= 1)");
  }
  if (updates != indices) {
    Fail(ErrorKind::kShape, "the updates ", ToString(updates),
         " must have the indices' shape ", ToString(indices));
  }
  const int64_t a = DimOfAxis(axis, data);
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != a && indices[d] > data[d]) {
      Fail(ErrorKind::kShape, "the indices ", ToString(indices),
           " are larger than the data ", ToString(data), " on axis ", d);
    }
  }
  if (data[a] == 0 && NumElements(indices) > 0) {
    Fail(ErrorKind::kShape, "scatters into the empty axis ", a, " of the data ",
         ToString(data));
  }
  return data;
}

Shape ScatterNdAttrs::OutputShape(const std::vector<Tensor>& inputs) const {
  CheckOperands(kOp, inputs);
  const Shape& data = inputs[0].shape;
  const Shape& indices = IndicesShape(inputs);
  const Shape& updates = inputs.back().shape;
  if (indices.empty() || indices.back() < 1 ||
      indices.back() > static_cast<int64_t>(data.size())) {
    Fail(ErrorKind::kShape, "the indices ", ToString(indices),
         " must end in a dim of 1 to the data's rank (", data.size(), ")");
  }
  const size_t k = static_cast<size_t>(indices.back());
  Shape want(indices.begin(), indices.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (updates != want) {
    Fail(ErrorKind::kShape, "the updates ", ToString(updates), " must be ",
         ToString(want),
         " (the indices' leading dims, then the data's after the first ", k,
         ")");
  }
  for (size_t d = 0; d < k; ++d) {
    if (data[d] == 0 && NumElements(want) > 0) {
      Fail(ErrorKind::kShape, "scatters into the empty axis ", d,
           " of the data ", ToString(data));
    }
  }
  return data;
}

}  // namespace ai3
