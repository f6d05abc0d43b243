#include "core/ops/where/where.h"

#include "core/errors.h"
#include "core/ops/binary/broadcast.h"
#include "core/ops/checks.h"

namespace ai3 {

void WhereAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckConstantOperand(kOp, has_other, other_shape, other_dtype, params,
                       "the constant branch");
}

Shape WhereAttrs::OutputShape(const std::vector<Tensor>& inputs) const {
  const Tensor& cond = inputs[0];
  if (cond.dtype != DType::kBool) {
    Fail(ErrorKind::kDType, "the condition (input 0) is ", Name(cond.dtype),
         "; where takes a bool condition");
  }
  const DType b_dtype = has_other ? other_dtype : inputs[2].dtype;
  if (inputs[1].dtype != b_dtype) {
    Fail(ErrorKind::kDType, "input 1 is ", Name(inputs[1].dtype), " but ",
         has_other ? "the constant branch" : "input 2", " is ", Name(b_dtype),
         "; where's branches share one dtype");
  }
  const Shape& b = has_other ? other_shape : inputs[2].shape;
  CheckShape(cond.shape, "the condition");
  CheckShape(inputs[1].shape, "input 1");
  CheckShape(b, "the other branch");
  const Shape branches =
      BroadcastShapes(inputs[1].shape, b, "input 1", "the other branch");
  return BroadcastShapes(cond.shape, branches, "the condition", "the branches");
}

}  // namespace ai3
