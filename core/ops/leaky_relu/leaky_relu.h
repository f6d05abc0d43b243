// leaky_relu: y = x for x >= 0, alpha * x below, elementwise; NaN passes
// through. torch nn.LeakyReLU (negative_slope) and ONNX LeakyRelu default
// alpha to 0.01 (the default here); Keras 3's LeakyReLU to 0.3, so its
// frontend passes it explicitly. No weights; any shape; float32 or float64
// from the input.
#ifndef AI3_CORE_OPS_LEAKY_RELU_LEAKY_RELU_H_
#define AI3_CORE_OPS_LEAKY_RELU_LEAKY_RELU_H_

#include <cmath>
#include <vector>

#include "core/errors.h"
#include "core/ops/elementwise.h"

namespace ai3 {

struct LeakyReluAttrs : ElementwiseAttrs<LeakyReluAttrs> {
  static constexpr char kOp[] = "leaky_relu";
  double alpha = 0.01;

  void Validate(const std::vector<Tensor>& params) const {
    ElementwiseAttrs<LeakyReluAttrs>::Validate(params);
    if (!std::isfinite(alpha)) {
      Fail(ErrorKind::kInvalidArgument, "alpha must be finite, got ", alpha);
    }
  }
};

// The formula of "direct" on the CPU and on CUDA. x < 0 is false for NaN,
// which passes; alpha is rounded to the input's dtype, as torch does.
struct LeakyReluFn {
  explicit LeakyReluFn(const LeakyReluAttrs& a) : alpha(a.alpha) {}
  template <typename T>
  AI3_HOST_DEVICE T operator()(T x) const {
    return x < T(0) ? static_cast<T>(alpha) * x : x;
  }
  double alpha;
};

// leaky_relu_backward_data: dx = dy where x > 0, alpha * dy elsewhere (x == 0
// and NaN included), as torch's leaky_relu_backward.
struct LeakyReluBackwardDataAttrs : DataGradientAttrs<LeakyReluAttrs> {
  static constexpr char kOp[] = "leaky_relu_backward_data";
};
struct LeakyReluGradFn {
  explicit LeakyReluGradFn(const LeakyReluAttrs& a) : alpha(a.alpha) {}
  template <typename T>
  T operator()(T dy, T x, T) const {
    return x > T(0) ? dy : static_cast<T>(alpha) * dy;
  }
  double alpha;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_LEAKY_RELU_LEAKY_RELU_H_
