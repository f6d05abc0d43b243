// linear's gradient ops (issue 16): linear_backward_data (dL/dx, data/),
// linear_backward_weight (dL/dW, weight/) and linear_backward_bias (dL/db,
// bias/). Each is an ordinary op with linear's attributes and weights
// (linear_declaration.h), reading [grad_output, x, y]: x of any rank >= 1
// whose leading dimensions are all batch dimensions, y and grad_output
// shaped like linear's output for it (core/ops/conv2d/backward/
// gradient_kernel.h).
#ifndef AI3_CORE_OPS_LINEAR_BACKWARD_LINEAR_BACKWARD_H_
#define AI3_CORE_OPS_LINEAR_BACKWARD_LINEAR_BACKWARD_H_

#include <cstdint>
#include <vector>

#include "core/ops/conv2d/backward/gradient_kernel.h"
#include "core/ops/linear/linear.h"
#include "core/tensor.h"

namespace ai3 {

// The output is the target's gradient, shaped like x, the weight
// (out_features, in_features) or the bias (out_features,); the bias
// gradient (grad_output summed over every leading dimension) is defined
// whether or not the layer has a bias.
template <GradientTarget kTarget>
struct LinearGradientAttrs : LinearAttrs {
  static constexpr const char* kOp =
      kTarget == GradientTarget::kData     ? "linear_backward_data"
      : kTarget == GradientTarget::kWeight ? "linear_backward_weight"
                                           : "linear_backward_bias";

  int MinInputs() const { return 3; }
  int MaxInputs() const { return 3; }

  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    CheckGradientInputs(inputs, ForwardOutputOf(inputs[1], [&](const Tensor& x) {
                          return LinearAttrs::OutputShape(x);
                        }));
    if (kTarget == GradientTarget::kData) return inputs[1].shape;
    if (kTarget == GradientTarget::kWeight) return {out_features, in_features};
    return {out_features};
  }
};
using LinearBackwardDataAttrs = LinearGradientAttrs<GradientTarget::kData>;
using LinearBackwardWeightAttrs = LinearGradientAttrs<GradientTarget::kWeight>;
using LinearBackwardBiasAttrs = LinearGradientAttrs<GradientTarget::kBias>;

// The base of a linear gradient kernel: GradientKernel, plus the number of
// rows (the product of x's leading dimensions) of the call.
template <class Attrs, class Derived>
class LinearGradientKernel : public GradientKernel<Attrs, Derived> {
 public:
  using GradientKernel<Attrs, Derived>::GradientKernel;

  size_t ScratchBytes(const std::vector<Tensor>&) const { return 0; }

 protected:
  int64_t Rows(const std::vector<Tensor>& inputs) const {
    return inputs[1].numel() / this->attrs_.in_features;
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_LINEAR_BACKWARD_LINEAR_BACKWARD_H_
