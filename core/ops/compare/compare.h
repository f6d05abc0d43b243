// Comparisons and logical ops with NumPy broadcasting, giving bool (torch
// ==, <, >, <=, >=, &, |, ^ on bools, ~; ONNX Equal, Less, Greater,
// LessOrEqual, GreaterOrEqual, And, Or, Xor, Not):
//   2 inputs:            y = x0 op x1
//   1 input + "other":   y = x op other (a constant, e.g. the 0 of mask == 0)
// The operands share one dtype, any of float32, float64, int64 and bool (a
// constant must have it too); and / or / xor read nonzero as true. NaN
// compares false except under "not equal" (which is not(equal)). logical_not
// takes one input of any dtype: y = (x == 0).
//
// One attributes template serves the comparisons and the binary logical
// ops, one instance each, as core/ops/binary does for arithmetic.
#ifndef AI3_CORE_OPS_COMPARE_COMPARE_H_
#define AI3_CORE_OPS_COMPARE_COMPARE_H_

#include <vector>

#include "core/errors.h"
#include "core/ops/binary/broadcast.h"
#include "core/ops/checks.h"
#include "core/tensor.h"

namespace ai3 {

enum class CompareOp {
  kEqual,
  kLess,
  kGreater,
  kLessEqual,
  kGreaterEqual,
  kAnd,
  kOr,
  kXor
};

constexpr const char* CompareOpName(CompareOp op) {
  return op == CompareOp::kEqual          ? "equal"
         : op == CompareOp::kLess         ? "less"
         : op == CompareOp::kGreater      ? "greater"
         : op == CompareOp::kLessEqual    ? "less_equal"
         : op == CompareOp::kGreaterEqual ? "greater_equal"
         : op == CompareOp::kAnd          ? "logical_and"
         : op == CompareOp::kOr           ? "logical_or"
                                          : "logical_xor";
}

template <CompareOp Op>
struct CompareAttrs {
  static constexpr const char* kOp = CompareOpName(Op);
  static constexpr CompareOp kCompareOp = Op;
  static constexpr bool kAnyDType = true;

  // True: one input and the constant operand params[0].
  bool has_other = false;
  Shape other_shape;
  DType other_dtype = DType::kFloat32;

  int MinInputs() const { return has_other ? 1 : 2; }
  int MaxInputs() const { return has_other ? 1 : 2; }

  void Validate(const std::vector<Tensor>& params) const {
    CheckConstantOperand(kOp, has_other, other_shape, other_dtype, params,
                         "the constant operand");
  }

  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    const Shape& b = has_other ? other_shape : inputs[1].shape;
    const DType b_dtype = has_other ? other_dtype : inputs[1].dtype;
    if (b_dtype != inputs[0].dtype) {
      Fail(ErrorKind::kDType, "input 0 is ", Name(inputs[0].dtype), " but ",
           has_other ? "the constant operand" : "input 1", " is ",
           Name(b_dtype), "; ", kOp, " compares operands of one dtype");
    }
    CheckShape(inputs[0].shape, "input 0");
    CheckShape(b, has_other ? "the constant operand" : "input 1");
    return BroadcastShapes(inputs[0].shape, b, "input 0",
                           has_other ? "the constant operand" : "input 1");
  }
  DType OutputDType(const std::vector<Tensor>&) const { return DType::kBool; }
};

using EqualAttrs = CompareAttrs<CompareOp::kEqual>;
using LessAttrs = CompareAttrs<CompareOp::kLess>;
using GreaterAttrs = CompareAttrs<CompareOp::kGreater>;
using LessEqualAttrs = CompareAttrs<CompareOp::kLessEqual>;
using GreaterEqualAttrs = CompareAttrs<CompareOp::kGreaterEqual>;
using LogicalAndAttrs = CompareAttrs<CompareOp::kAnd>;
using LogicalOrAttrs = CompareAttrs<CompareOp::kOr>;
using LogicalXorAttrs = CompareAttrs<CompareOp::kXor>;

// logical_not: y = (x == 0), bool, for an input of any dtype.
struct LogicalNotAttrs {
  static constexpr char kOp[] = "logical_not";
  static constexpr bool kAnyDType = true;

  void Validate(const std::vector<Tensor>& params) const {
    CheckNoParams(kOp, params);
  }
  Shape OutputShape(const Tensor& input) const {
    CheckShape(input.shape, "input");
    return input.shape;
  }
  DType OutputDType(const Tensor&) const { return DType::kBool; }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_COMPARE_COMPARE_H_
