// where: torch.where(cond, x, y) / ONNX Where, and masked_fill (where(mask,
// value, x)): y[i] = cond[i] ? x[i] : y[i], the three broadcast together as
// NumPy does.
//   3 inputs:              cond, x, y
//   2 inputs + "other":    cond, then y with the constant x (other_is_x,
//                          masked_fill's value) or x with the constant y
// cond is bool; x and y share one dtype (any), the output's.
#ifndef AI3_CORE_OPS_WHERE_WHERE_H_
#define AI3_CORE_OPS_WHERE_WHERE_H_

#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct WhereAttrs {
  static constexpr char kOp[] = "where";
  static constexpr bool kAnyDType = true;

  // True: two inputs (cond and one branch) and the constant branch
  // params[0]: x when other_is_x, else y.
  bool has_other = false;
  bool other_is_x = false;
  Shape other_shape;
  DType other_dtype = DType::kFloat32;

  int MinInputs() const { return has_other ? 2 : 3; }
  int MaxInputs() const { return has_other ? 2 : 3; }

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const std::vector<Tensor>& inputs) const;
  DType OutputDType(const std::vector<Tensor>& inputs) const {
    return inputs[1].dtype;
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_WHERE_WHERE_H_
