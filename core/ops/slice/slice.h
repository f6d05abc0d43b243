// slice: every step-th element of one axis from start towards stop, with
// Python's slice semantics (x[..., start:stop:step, ...]): negative start
// and stop count from the end, out-of-range bounds are clamped, step may be
// negative (walking backwards) but not 0. torch split/chunk/narrow/getitem
// and ONNX Slice/Split become slices. Unbounded ends are INT64_MAX /
// INT64_MIN (as ONNX writes them). No weights.
#ifndef AI3_CORE_OPS_SLICE_SLICE_H_
#define AI3_CORE_OPS_SLICE_SLICE_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct SliceAttrs {
  static constexpr char kOp[] = "slice";
  // Moves elements without reading them: any dtype (core/layer.h).
  static constexpr bool kAnyDType = true;
  DType OutputDType(const Tensor& input) const { return input.dtype; }

  int64_t axis = 0;
  int64_t start = 0;
  int64_t stop = std::numeric_limits<int64_t>::max();
  int64_t step = 1;

  // The input as [outer, len, inner] around the axis, and the first index
  // and count taken along it.
  struct Range {
    int64_t outer, len, inner, first, count;
  };

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
  // Throws kShape when the axis is out of range for `shape`.
  Range RangeOf(const Shape& shape) const;
  // Where the slice is one contiguous block of the input (nothing outside
  // the axis varies, or the whole axis is taken in order): its first
  // element; otherwise none (core/layer.h).
  std::optional<int64_t> ViewOffset(const Shape& input) const;
};

// slice_backward_data: x's shape, dy's rows where the slice took them and
// zeros elsewhere (direct.cc).
struct SliceBackwardDataAttrs : DataGradientAttrs<SliceAttrs> {
  static constexpr char kOp[] = "slice_backward_data";
  // Gradients are float32 or float64, as the other gradient ops'.
  static constexpr bool kAnyDType = false;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_SLICE_SLICE_H_
