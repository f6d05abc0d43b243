#include "core/ops/matmul/matmul.h"

#include "core/errors.h"
#include "core/ops/binary/broadcast.h"

namespace ai3 {

void MatmulAttrs::Validate(const std::vector<Tensor>& params) const {
  const size_t want = has_other ? 1 : 0;
  if (params.size() != want) {
    Fail(ErrorKind::kInvalidArgument, "matmul takes ", want,
         " parameter tensor", want == 1 ? " (the constant right operand)" : "s",
         ", got ", params.size());
  }
  if (has_other) {
    if (params[0].shape != other_shape || params[0].dtype != other_dtype) {
      Fail(ErrorKind::kInternal, "the constant operand is ",
           Name(params[0].dtype), " ", ToString(params[0].shape),
           " but the attributes say ", Name(other_dtype), " ",
           ToString(other_shape));
    }
    if (other_shape.empty()) {
      Fail(ErrorKind::kShape,
           "the constant operand is a scalar; matmul "
           "needs at least 1 dimension");
    }
  }
}

MatmulAttrs::Dims MatmulAttrs::DimsOf(const Shape& a, const Shape& b) const {
  if (a.empty() || b.empty()) {
    Fail(ErrorKind::kShape, "matmul needs operands of rank >= 1, got ",
         ToString(a), " and ", ToString(b));
  }
  CheckShape(a, "the left operand");
  CheckShape(b, "the right operand");
  Dims d;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  d.m = a_vec ? 1 : a[a.size() - 2];
  d.k = a.back();
  const int64_t kb = b_vec ? b[0] : b[b.size() - 2];
  d.n = b_vec ? 1 : b.back();
  if (kb != d.k) {
    Fail(ErrorKind::kShape, "cannot multiply ", ToString(a), " by ",
         ToString(b), ": the left operand has ", d.k,
         " columns, the right one ", kb, " rows");
  }
  d.a_batch = a_vec ? Shape{} : Shape(a.begin(), a.end() - 2);
  d.b_batch = b_vec ? Shape{} : Shape(b.begin(), b.end() - 2);
  d.batch = BroadcastShapes(d.a_batch, d.b_batch,
                            "batch dims of the left "
                            "operand",
                            "batch dims of the right operand");
  d.out = d.batch;
  if (!a_vec) d.out.push_back(d.m);
  if (!b_vec) d.out.push_back(d.n);
  CheckShape(d.out, "output");
  return d;
}

Shape MatmulAttrs::OutputShape(const std::vector<Tensor>& inputs) const {
  if (has_other) {
    if (other_dtype != inputs[0].dtype) {
      Fail(ErrorKind::kDType, "input is ", Name(inputs[0].dtype),
           " but the constant operand is ", Name(other_dtype));
    }
    return DimsOf(inputs[0].shape, other_shape).out;
  }
  return DimsOf(inputs[0].shape, inputs[1].shape).out;
}

}  // namespace ai3
