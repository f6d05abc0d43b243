// argmax and argmin: the index of the largest (smallest) element along
// `axis` (torch.argmax / argmin, ONNX ArgMax / ArgMin, keras.ops.argmax /
// argmin), an int64 tensor shaped like the input without that axis, or with
// it as size 1 when `keepdim`. Ties give the first index, or the last with
// `select_last_index` (ONNX's attribute). NaN is larger and smaller than
// every number, as in torch: the first NaN's index (the last one's with
// select_last_index) wins. The axis is in memory order, negative from the
// end, and must not be empty (there is no index to give). The input is
// float32, float64 or int64. No weights.
//
// One attributes template serves both ops, one instance each.
#ifndef AI3_CORE_OPS_ARGMAX_ARGMAX_H_
#define AI3_CORE_OPS_ARGMAX_ARGMAX_H_

#include <cstdint>
#include <vector>

#include "core/ops/checks.h"
#include "core/tensor.h"

namespace ai3 {

// What argmax and argmin share: everything but the direction.
struct ArgExtremeAxis {
  // int64 inputs as well as the float ones: OutputShape checks the dtype.
  static constexpr bool kAnyDType = true;
  DType OutputDType(const Tensor&) const { return DType::kInt64; }

  int64_t axis = 0;
  bool keepdim = false;
  bool select_last_index = false;

 protected:
  // The output shape, and what the kernel relies on: a float or int64
  // input, an axis in range and not empty. `op` names the op in errors.
  Shape OutputShapeOf(const char* op, const Tensor& input) const;
};

template <bool kLargest>
struct ArgExtremeAttrs : ArgExtremeAxis {
  static constexpr const char* kOp = kLargest ? "argmax" : "argmin";
  static constexpr bool kFindsLargest = kLargest;
  void Validate(const std::vector<Tensor>& params) const {
    CheckNoParams(kOp, params);
  }
  Shape OutputShape(const Tensor& input) const {
    return OutputShapeOf(kOp, input);
  }
};

using ArgmaxAttrs = ArgExtremeAttrs<true>;
using ArgminAttrs = ArgExtremeAttrs<false>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_ARGMAX_ARGMAX_H_
