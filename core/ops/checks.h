// Checks the attributes of several ops share, with one wording for each
// error (elementwise ops have theirs in ElementwiseAttrs), and the shape
// arithmetic around an axis that follows them.
#ifndef AI3_CORE_OPS_CHECKS_H_
#define AI3_CORE_OPS_CHECKS_H_

#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "core/tensor.h"

namespace ai3 {

// kInvalidArgument unless `params` is empty: for ops without weights.
inline void CheckNoParams(const char* op, const std::vector<Tensor>& params) {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument, op, " takes no parameter tensors, got ",
         params.size());
  }
}

// The parameters of an op whose constant operand may stand for one of its
// inputs (gather's table, a comparison's or where's constant): exactly that
// tensor when `has_other`, of the shape and dtype the attributes recorded
// from it, else none. `what` names the constant ("the table").
inline void CheckConstantOperand(const char* op, bool has_other,
                                 const Shape& shape, DType dtype,
                                 const std::vector<Tensor>& params,
                                 const char* what) {
  const size_t want = has_other ? 1 : 0;
  if (params.size() != want) {
    Fail(ErrorKind::kInvalidArgument, op, " takes ", want, " parameter tensor",
         want == 1 ? "" : "s", has_other ? " (" : "", has_other ? what : "",
         has_other ? ")" : "", ", got ", params.size());
  }
  if (has_other && (params[0].shape != shape || params[0].dtype != dtype)) {
    Fail(ErrorKind::kInternal, what, " is ", Name(params[0].dtype), " ",
         ToString(params[0].shape), " but the attributes say ", Name(dtype),
         " ", ToString(shape));
  }
}

// A window's per-dim sizes (conv3d's and pool3d's kernel, stride,
// dilation, padding): exactly `count` values, each in [lowest, 2^31 - 1]
// (the int32 limit oneDNN and PyTorch take them in, which keeps the
// kernels' index arithmetic far inside int64).
inline void CheckWindowSizes(const char* what, const std::vector<int64_t>& v,
                             size_t count, int64_t lowest) {
  constexpr int64_t kLargest = (int64_t{1} << 31) - 1;
  if (v.size() != count) {
    Fail(ErrorKind::kInvalidArgument, what, " must have ", count,
         " values, got ", v.size());
  }
  for (int64_t x : v) {
    if (x < lowest || x > kLargest) {
      Fail(ErrorKind::kInvalidArgument, what, " values must be in [", lowest,
           ", 2^31 - 1], got ", x);
    }
  }
}

// The dimension of `shape` that `axis` names (negative counts from the
// end); kShape when it names none.
inline int64_t DimOfAxis(int64_t axis, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank) {
    Fail(ErrorKind::kShape, "axis ", axis, " is out of range for a rank-", rank,
         " input ", ToString(shape));
  }
  return axis < 0 ? axis + rank : axis;
}

// The product of dimensions [begin, end) of `shape` (1 when empty): the
// outer and inner sizes around an axis, viewing a tensor as
// [outer, axis, inner].
inline int64_t DimsProduct(const Shape& shape, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_CHECKS_H_
