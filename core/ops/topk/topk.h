// topk: the int64 indices of the k largest (or, with largest false, the k
// smallest) elements along `axis` (memory order, negative from the end),
// best first; the output is the input's shape with that axis of size k.
// Equal values keep their order (the lower index first), as ONNX TopK
// asks; NaN is larger than every number, as in torch.topk. The values
// themselves are gather_elements(x, indices): the frontends map ONNX TopK
// and torch.topk to the two layers, since a core layer returns one tensor.
// The input is float32, float64 or int64; 0 <= k <= the axis' size. No
// weights.
#ifndef AI3_CORE_OPS_TOPK_TOPK_H_
#define AI3_CORE_OPS_TOPK_TOPK_H_

#include <cstdint>
#include <vector>

#include "core/ops/checks.h"
#include "core/tensor.h"

namespace ai3 {

struct TopkAttrs {
  static constexpr const char* kOp = "topk";
  // int64 inputs as well as the float ones: OutputShape checks the dtype.
  static constexpr bool kAnyDType = true;
  DType OutputDType(const Tensor&) const { return DType::kInt64; }

  int64_t k = 1;
  int64_t axis = -1;
  bool largest = true;

  void Validate(const std::vector<Tensor>& params) const {
    CheckNoParams(kOp, params);
  }
  // The output shape, and what the kernel relies on: a float or int64
  // input, an axis in range, 0 <= k <= its size.
  Shape OutputShape(const Tensor& input) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_TOPK_TOPK_H_
