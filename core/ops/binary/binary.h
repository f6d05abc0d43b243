// add, sub, mul, div, pow, maximum, minimum, prelu, remainder, fmod with
// NumPy broadcasting (torch +, -, *, /, **, maximum, minimum, F.prelu, %,
// fmod; ONNX Add, Sub, Mul, Div, Pow, Max, Min, PRelu, Mod; Keras Add,
// Subtract, Multiply, Maximum, Minimum, PReLU), as layers of an ai3::Model:
//   2 inputs:             y = x0 op x1
//   1 input + "other":    y = x op other    (reverse: y = other op x)
// where "other" is a constant weight tensor (a bias, a position embedding, a
// scale) broadcast like an input. The output has the broadcast shape; the
// dtype, float32 or float64, is the inputs' (a constant must have it too).
// add, sub, mul, maximum and minimum also take int64 (the position and mask
// arithmetic of language models: RoBERTa's cumsum(mask) * mask + pad);
// their sums and products wrap as two's complement, as torch's do. (div
// and pow of integers mean other things in each framework: float only.)
//
// maximum and minimum propagate NaN (torch.maximum, np.maximum); prelu is
// x where x >= 0, else slope * x, the slope being the second operand: a 1-D
// slope of C values applies along dimension 1 of an input of rank >= 2
// (torch's PReLU weight, its channels), any other shape broadcasts as NumPy
// does (ONNX PRelu's frontend writes a 1-D slope out to the input's rank);
// pow is std::pow, with the constant exponents 1, 2 and -1 computed
// exactly without it. remainder and fmod are the two remainders of x0 / x1:
// remainder's takes the divisor's sign (torch.remainder, Python's %, ONNX
// Mod), fmod's the dividend's (torch.fmod, C's fmod and %, ONNX Mod with
// fmod=1); both take int64 too, where a remainder by 0 (and INT64_MIN by
// -1) is 0, as NumPy gives, instead of undefined. The variadic forms (ONNX Max,
// Min, Mean, Sum) are chains of these two-operand ops in the frontends.
//
// One attributes template serves the ten ops, one instance each; each is
// its own op in the registry (its own kOp) so selectors and ai3.algorithms()
// name it. The graph's N-input same-shape "add" node (core/ops/add) stays as it
// was.
#ifndef AI3_CORE_OPS_BINARY_BINARY_H_
#define AI3_CORE_OPS_BINARY_BINARY_H_

#include <vector>

#include "core/errors.h"
#include "core/ops/binary/broadcast.h"
#include "core/tensor.h"

namespace ai3 {

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMaximum,
  kMinimum,
  kPrelu,
  kRemainder,
  kFmod
};

// The names of the ops, by BinaryOp.
constexpr const char* BinaryOpName(BinaryOp op) {
  return op == BinaryOp::kAdd         ? "add"
         : op == BinaryOp::kSub       ? "sub"
         : op == BinaryOp::kMul       ? "mul"
         : op == BinaryOp::kDiv       ? "div"
         : op == BinaryOp::kPow       ? "pow"
         : op == BinaryOp::kMaximum   ? "maximum"
         : op == BinaryOp::kMinimum   ? "minimum"
         : op == BinaryOp::kPrelu     ? "prelu"
         : op == BinaryOp::kRemainder ? "remainder"
                                      : "fmod";
}

// Whether the op takes int64 operands too.
constexpr bool BinaryTakesInt64(BinaryOp op) {
  return op == BinaryOp::kAdd || op == BinaryOp::kSub || op == BinaryOp::kMul ||
         op == BinaryOp::kMaximum || op == BinaryOp::kMinimum ||
         op == BinaryOp::kRemainder || op == BinaryOp::kFmod;
}

template <BinaryOp Op>
struct BinaryAttrs {
  static constexpr const char* kOp = BinaryOpName(Op);
  static constexpr BinaryOp kBinaryOp = Op;
  static constexpr bool kTakesInt64 = BinaryTakesInt64(Op);
  // int64 as well as the float dtypes (core/layer.h): CheckDType below
  // checks what the layer would.
  static constexpr bool kAnyDType = true;
  DType OutputDType(const std::vector<Tensor>& inputs) const {
    return inputs[0].dtype;
  }

  // True: one input and the constant operand params[0]; false: two inputs.
  bool has_other = false;
  // With has_other: other op x instead of x op other (e.g. 1 - x, 2 / x).
  bool reverse = false;
  // With has_other: the constant's shape and dtype, as params[0] has them
  // (shapes are known before any kernel holds the constant).
  Shape other_shape;
  DType other_dtype = DType::kFloat32;

  // The second operand's shape as the broadcast reads it: prelu's 1-D slope
  // along dimension 1, (C, 1, ..., 1); else `shape` itself.
  static Shape OperandShape(const Shape& shape, size_t input_rank) {
    if (Op != BinaryOp::kPrelu || shape.size() != 1 || input_rank < 2) {
      return shape;
    }
    Shape s(input_rank - 1, 1);
    s[0] = shape[0];
    return s;
  }

  int MinInputs() const { return has_other ? 1 : 2; }
  int MaxInputs() const { return has_other ? 1 : 2; }

  void Validate(const std::vector<Tensor>& params) const {
    const size_t want = has_other ? 1 : 0;
    if (params.size() != want) {
      Fail(ErrorKind::kInvalidArgument, kOp, " takes ", want,
           " parameter tensor", want == 1 ? "" : "s",
           has_other ? " (the constant operand)" : "", ", got ", params.size());
    }
    if (reverse && Op == BinaryOp::kPrelu) {
      Fail(ErrorKind::kInvalidArgument,
           "prelu's slope is its second operand (reverse is not defined)");
    }
    if (reverse && !has_other) {
      Fail(ErrorKind::kInvalidArgument,
           "reverse applies only to the one-input form with a constant");
    }
    if (has_other &&
        (params[0].shape != other_shape || params[0].dtype != other_dtype)) {
      Fail(ErrorKind::kInternal, "the constant operand is ",
           Name(params[0].dtype), " ", ToString(params[0].shape),
           " but the attributes say ", Name(other_dtype), " ",
           ToString(other_shape));
    }
    CheckShape(other_shape, "the constant operand");
    if (has_other) CheckDType(other_dtype, "the constant operand");
  }

  // Throws unless `dtype` is one this op computes in.
  static void CheckDType(DType dtype, const char* what) {
    if (!IsFloat(dtype) && !(kTakesInt64 && dtype == DType::kInt64)) {
      Fail(ErrorKind::kDType, what, " is ", Name(dtype), "; ", kOp,
           kTakesInt64 ? " takes float32, float64 or int64"
                       : " takes float32 or float64");
    }
  }

  // The broadcast shape of the two operands.
  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    CheckDType(inputs[0].dtype, "input 0");
    if (!has_other && inputs[1].dtype != inputs[0].dtype) {
      Fail(ErrorKind::kDType, "input 1 is ", Name(inputs[1].dtype),
           " but input 0 is ", Name(inputs[0].dtype),
           "; every input must have one dtype");
    }
    const size_t rank = inputs[0].shape.size();
    if (!has_other) {
      return BroadcastShapes(inputs[0].shape,
                             OperandShape(inputs[1].shape, rank), "input 0",
                             "input 1");
    }
    if (other_dtype != inputs[0].dtype) {
      Fail(ErrorKind::kDType, "input is ", Name(inputs[0].dtype),
           " but the constant operand is ", Name(other_dtype));
    }
    return reverse ? BroadcastShapes(other_shape, inputs[0].shape, "constant",
                                     "input")
                   : BroadcastShapes(inputs[0].shape,
                                     OperandShape(other_shape, rank), "input",
                                     "constant");
  }
};

using AddAttrs = BinaryAttrs<BinaryOp::kAdd>;
using SubAttrs = BinaryAttrs<BinaryOp::kSub>;
using MulAttrs = BinaryAttrs<BinaryOp::kMul>;
using DivAttrs = BinaryAttrs<BinaryOp::kDiv>;
using PowAttrs = BinaryAttrs<BinaryOp::kPow>;
using MaximumAttrs = BinaryAttrs<BinaryOp::kMaximum>;
using MinimumAttrs = BinaryAttrs<BinaryOp::kMinimum>;
using RemainderAttrs = BinaryAttrs<BinaryOp::kRemainder>;
using FmodAttrs = BinaryAttrs<BinaryOp::kFmod>;
using PreluAttrs = BinaryAttrs<BinaryOp::kPrelu>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_BINARY_BINARY_H_
