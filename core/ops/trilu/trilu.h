// trilu: the upper or lower triangle of the matrices in the last two dims
// (torch.triu / tril, ONNX Trilu, keras.ops.triu / tril); the rest is zero.
// Element (i, j) of each matrix is kept when j - i >= k (upper) or
// j - i <= k (lower): k = 0 is the main diagonal, k > 0 above it, k < 0
// below it. Any dtype (float32, float64, int64, bool: the causal masks
// language models build); the output has the input's. Rank >= 2. No
// weights.
#ifndef AI3_CORE_OPS_TRILU_TRILU_H_
#define AI3_CORE_OPS_TRILU_TRILU_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct TriluAttrs {
  static constexpr char kOp[] = "trilu";
  static constexpr bool kAnyDType = true;
  DType OutputDType(const Tensor& input) const { return input.dtype; }

  bool upper = true;
  int64_t k = 0;

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_TRILU_TRILU_H_
