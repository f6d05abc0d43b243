// hardsigmoid: y = clamp(alpha * x + beta, 0, 1) elementwise. torch's
// nn.Hardsigmoid is alpha 1/6, beta 1/2 (the defaults here); ONNX
// HardSigmoid defaults to alpha 0.2, beta 0.5. No weights; any shape;
// float32 or float64 from the input; NaN passes through.
#ifndef AI3_CORE_OPS_HARDSIGMOID_HARDSIGMOID_H_
#define AI3_CORE_OPS_HARDSIGMOID_HARDSIGMOID_H_

#include <cmath>
#include <vector>

#include "core/errors.h"
#include "core/ops/elementwise.h"

namespace ai3 {

struct HardsigmoidAttrs : ElementwiseAttrs<HardsigmoidAttrs> {
  static constexpr char kOp[] = "hardsigmoid";
  double alpha = 1.0 / 6.0;
  double beta = 0.5;

  void Validate(const std::vector<Tensor>& params) const {
    ElementwiseAttrs<HardsigmoidAttrs>::Validate(params);
    if (!std::isfinite(alpha) || !std::isfinite(beta)) {
      Fail(ErrorKind::kInvalidArgument, "alpha and beta must be finite, got ",
           alpha, " and ", beta);
    }
  }
};

// hardsigmoid_backward_data: dx = alpha * dy where 0 < alpha x + beta < 1
// (the ends excluded, as torch's hardsigmoid_backward: -3 < x < 3), else 0.
struct HardsigmoidBackwardDataAttrs : DataGradientAttrs<HardsigmoidAttrs> {
  static constexpr char kOp[] = "hardsigmoid_backward_data";
};
struct HardsigmoidGradFn {
  explicit HardsigmoidGradFn(const HardsigmoidAttrs& a)
      : alpha(a.alpha), beta(a.beta) {}
  template <typename T>
  T operator()(T dy, T x, T) const {
    const T r = static_cast<T>(alpha) * x + static_cast<T>(beta);
    return r > T(0) && r < T(1) ? static_cast<T>(alpha) * dy : T(0);
  }
  double alpha, beta;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_HARDSIGMOID_HARDSIGMOID_H_
