// clamp: y = min(max(x, min), max) elementwise, as torch.clamp: serves
// nn.ReLU6 (0, 6), nn.Hardtanh (min_val, max_val) and Keras ReLU(max_value).
// NaN passes through; min > max gives max everywhere, as in PyTorch. No
// weights: the input may have any shape (rank 0 included) and its dtype,
// float32 or float64, is the layer's.
#ifndef AI3_CORE_OPS_CLAMP_CLAMP_H_
#define AI3_CORE_OPS_CLAMP_CLAMP_H_

#include <cmath>
#include <limits>
#include <vector>

#include "core/errors.h"
#include "core/ops/elementwise.h"
#include "core/tensor.h"

namespace ai3 {

struct ClampAttrs : ElementwiseAttrs<ClampAttrs> {
  static constexpr char kOp[] = "clamp";

  // The bounds; +-infinity leaves that side open. Rounded to the input's
  // dtype when the layer runs.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();

  // No parameter tensors (ElementwiseAttrs), and bounds that are not NaN.
  void Validate(const std::vector<Tensor>& params) const {
    ElementwiseAttrs<ClampAttrs>::Validate(params);
    if (std::isnan(min) || std::isnan(max)) {
      Fail(ErrorKind::kInvalidArgument,
           "clamp bounds must not be NaN, got min ", min, " and max ", max);
    }
  }
};

// The formula of "direct" on the CPU and on CUDA, the bounds rounded to the
// input's dtype: each comparison is one max/min instruction, and NaN passes
// (both comparisons are false for it).
struct ClampFn {
  explicit ClampFn(const ClampAttrs& a) : lo(a.min), hi(a.max) {}
  template <typename T>
  AI3_HOST_DEVICE T operator()(T x) const {
    const T l = static_cast<T>(lo), h = static_cast<T>(hi);
    const T v = x < l ? l : x;
    return v > h ? h : v;
  }
  double lo, hi;
};

// clamp_backward_data: dy where min < x < max, else 0 (NaN passes dy), as
// torch's hardtanh_backward for the modules clamp serves (nn.ReLU6,
// nn.Hardtanh) and TF's Relu6Grad: at x exactly min or max the gradient is
// 0. (torch.clamp's own backward keeps dy at the bounds; the two differ
// there only.)
struct ClampBackwardDataAttrs : DataGradientAttrs<ClampAttrs> {
  static constexpr char kOp[] = "clamp_backward_data";
};
struct ClampGradFn {
  explicit ClampGradFn(const ClampAttrs& a) : lo(a.min), hi(a.max) {}
  template <typename T>
  T operator()(T dy, T x, T) const {
    const T l = static_cast<T>(lo), h = static_cast<T>(hi);
    return x <= l || x >= h ? T(0) : dy;
  }
  double lo, hi;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_CLAMP_CLAMP_H_
