// cumsum: the running sum along `axis` (torch.cumsum, ONNX CumSum):
//   y[..., i, ...] = the sum of x[..., j, ...] over j <= i
// `exclusive` sums j < i (the first element is 0); `reverse` runs from the
// end of the axis (j >= i, or j > i when exclusive). The axis is in memory
// order, negative from the end. float32, float64 and int64 (the token
// positions RoBERTa counts from its padding mask); the output has the
// input's dtype, and int64 sums wrap as two's complement, as torch's do.
// No weights.
#ifndef AI3_CORE_OPS_CUMSUM_CUMSUM_H_
#define AI3_CORE_OPS_CUMSUM_CUMSUM_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct CumsumAttrs {
  static constexpr char kOp[] = "cumsum";
  // int64 as well as the float dtypes: OutputShape checks the input's.
  static constexpr bool kAnyDType = true;
  DType OutputDType(const Tensor& input) const { return input.dtype; }

  int64_t axis = 0;
  bool exclusive = false;
  bool reverse = false;

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_CUMSUM_CUMSUM_H_
