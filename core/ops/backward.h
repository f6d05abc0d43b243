// What every gradient op shares (issue 16, the backward contract): an op
// F_backward_<target> is an ordinary multi-input op whose attributes and
// weights are exactly F's (its Attrs derive F's, so a frontend passes F's
// attributes through unchanged and F's Validate checks them), and whose
// inputs are [grad_output, x, y]: the gradient of F's output, F's input and
// F's output as F's forward produced it. Its output is the gradient with
// respect to the target: x's shape for `data`, a weight's for a weight.
//
//   struct ReluBackwardDataAttrs : DataGradientAttrs<ReluAttrs> {
//     static constexpr char kOp[] = "relu_backward_data";
//   };
#ifndef AI3_CORE_OPS_BACKWARD_H_
#define AI3_CORE_OPS_BACKWARD_H_

#include <vector>

#include "core/errors.h"
#include "core/tensor.h"

namespace ai3 {

// The inputs' order.
enum BackwardInput { kGradOutput = 0, kForwardInput = 1, kForwardOutput = 2 };

// What a gradient op differentiates its forward's loss with respect to: the
// input x (op F_backward_data) or one of F's weights (F_backward_<weight>).
enum class GradientTarget { kData, kWeight, kBias };

// The name of F's gradient op for `target`, of F's three
// (F_backward_data, F_backward_weight, F_backward_bias): an Attrs' kOp.
constexpr const char* GradientOpName(GradientTarget target, const char* data,
                                     const char* weight, const char* bias) {
  return target == GradientTarget::kData     ? data
         : target == GradientTarget::kWeight ? weight
                                             : bias;
}

template <class Forward>
struct GradientAttrs : Forward {
  int MinInputs() const { return 3; }
  int MaxInputs() const { return 3; }

  // Checks x with F's own shape rule (its rank, layout and dims, as F's
  // layer would), then that y has the shape F gives for it and grad_output
  // y's. Throws kShape naming the input that does not fit.
  void CheckGradientInputs(const std::vector<Tensor>& inputs) const {
    const Shape y = Forward::OutputShape(inputs[kForwardInput]);
    const struct {
      int k;
      const char* what;
    } checks[] = {{kForwardOutput, "input 2 (y, the forward's output)"},
                  {kGradOutput, "input 0 (grad_output)"}};
    for (const auto& c : checks) {
      if (inputs[c.k].shape != y) {
        Fail(ErrorKind::kShape, c.what, " is ", ToString(inputs[c.k].shape),
             " but the forward gives ", ToString(y), " for input 1 (x) ",
             ToString(inputs[kForwardInput].shape));
      }
    }
  }
};

// The gradient with respect to F's input: shaped like x.
template <class Forward>
struct DataGradientAttrs : GradientAttrs<Forward> {
  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    this->CheckGradientInputs(inputs);
    return inputs[kForwardInput].shape;
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_BACKWARD_H_
