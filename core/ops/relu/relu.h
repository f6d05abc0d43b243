// relu: y = max(x, 0) elementwise, NaN passing through as in PyTorch. No
// attributes and no weights: the input may have any shape (rank 0 included)
// and its dtype, float32 or float64, is the layer's.
#ifndef AI3_CORE_OPS_RELU_RELU_H_
#define AI3_CORE_OPS_RELU_RELU_H_

#include "core/ops/elementwise.h"

namespace ai3 {

struct ReluAttrs : ElementwiseAttrs<ReluAttrs> {
  static constexpr char kOp[] = "relu";
};

// The formula of "direct" on the CPU and on CUDA: x < 0 ? 0 : x, a single
// max instruction that keeps NaN (x < 0 is false for it).
struct ReluFn {
  explicit ReluFn(const ReluAttrs&) {}
  template <typename T>
  AI3_HOST_DEVICE T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};

// relu_backward_data: dx = dy where y > 0, else 0. Read from y, as torch's
// threshold_backward(grad, result, 0) does, so where x is NaN (and y with
// it) dy passes, as in torch.
struct ReluBackwardDataAttrs : DataGradientAttrs<ReluAttrs> {
  static constexpr char kOp[] = "relu_backward_data";
};
struct ReluGradFn {
  explicit ReluGradFn(const ReluAttrs&) {}
  template <typename T>
  T operator()(T dy, T, T y) const {
    return y <= T(0) ? T(0) : dy;
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_RELU_RELU_H_
