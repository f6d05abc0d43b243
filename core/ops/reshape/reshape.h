// reshape: the same elements in the same (row-major) order under another
// shape (torch view/reshape/squeeze/unsqueeze, ONNX Reshape/Squeeze/
// Unsqueeze, Keras Reshape). `shape` is the target, batch dim included,
// with ONNX's conventions: -1 (at most once) is inferred from the element
// count, 0 copies the input's dimension at that position. No weights.
#ifndef AI3_CORE_OPS_RESHAPE_RESHAPE_H_
#define AI3_CORE_OPS_RESHAPE_RESHAPE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct ReshapeAttrs {
  static constexpr char kOp[] = "reshape";
  // Moves elements without reading them: any dtype (core/layer.h).
  static constexpr bool kAnyDType = true;
  DType OutputDType(const Tensor& input) const { return input.dtype; }

  Shape shape;

  void Validate(const std::vector<Tensor>& params) const;
  // The target with -1 and 0 resolved; throws kShape when the element
  // counts differ.
  Shape OutputShape(const Tensor& input) const;
  // Always 0: a reshape keeps the elements in their order (core/layer.h).
  std::optional<int64_t> ViewOffset(const Shape& input) const {
    (void)input;
    return 0;
  }
};

// reshape_backward_data: dy's bytes in x's shape (a reshape changes only
// the shape), direct.cc.
struct ReshapeBackwardDataAttrs : DataGradientAttrs<ReshapeAttrs> {
  static constexpr char kOp[] = "reshape_backward_data";
  // Gradients are float32 or float64, as the other gradient ops'.
  static constexpr bool kAnyDType = false;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_RESHAPE_RESHAPE_H_
