// conv2d's gradient ops (issue 16): conv2d_backward_data (dL/dx, data/),
// conv2d_backward_weight (dL/dW, weight/) and conv2d_backward_bias (dL/db,
// bias/). Each is an ordinary op with conv2d's attributes and weights
// (conv2d_declaration.h), reading [grad_output, x, y] in the forward's
// layout and dtype; see gradient_kernel.h.
#ifndef AI3_CORE_OPS_CONV2D_BACKWARD_CONV2D_BACKWARD_H_
#define AI3_CORE_OPS_CONV2D_BACKWARD_CONV2D_BACKWARD_H_

#include <vector>

#include "core/ops/conv2d/backward/gradient_kernel.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/tensor.h"

namespace ai3 {

// The forward's parameters; every conv2d algorithm's geometry (GeometryOf)
// reads them as they are.
struct Conv2dBackwardAttrs : Conv2dAttrs {
  int MinInputs() const { return 3; }
  int MaxInputs() const { return 3; }

  // x is an input conv2d takes (rank 4, in_channels, the dtype), y has
  // conv2d's output shape for it and grad_output y's shape.
  void CheckInputs(const std::vector<Tensor>& inputs) const {
    CheckGradientInputs(inputs,
                        ForwardOutputOf(inputs[1], [&](const Tensor& x) {
                          return Conv2dAttrs::OutputShape(x);
                        }));
  }
};

// The attributes of conv2d_backward_data, conv2d_backward_weight and
// conv2d_backward_bias: the output is the target's gradient, shaped like x,
// the weight (out, in / groups, kh, kw) or the bias (out,). The bias
// gradient is defined (the sum of grad_output over the batch and the
// pixels) whether or not the layer has a bias.
template <GradientTarget kTarget>
struct Conv2dGradientAttrs : Conv2dBackwardAttrs {
  static constexpr const char* kOp =
      GradientOpName(kTarget, "conv2d_backward_data", "conv2d_backward_weight",
                     "conv2d_backward_bias");

  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    CheckInputs(inputs);
    if (kTarget == GradientTarget::kData) return inputs[1].shape;
    if (kTarget == GradientTarget::kWeight) {
      return {out_channels, in_channels_per_group(), kernel_h, kernel_w};
    }
    return {out_channels};
  }
};
using Conv2dBackwardDataAttrs = Conv2dGradientAttrs<GradientTarget::kData>;
using Conv2dBackwardWeightAttrs = Conv2dGradientAttrs<GradientTarget::kWeight>;
using Conv2dBackwardBiasAttrs = Conv2dGradientAttrs<GradientTarget::kBias>;

// The base of a conv2d gradient kernel (GradientKernel with the forward's
// geometry for the call's x).
template <class Attrs, class Derived>
class Conv2dGradientKernel : public GradientKernel<Attrs, Derived> {
 public:
  using GradientKernel<Attrs, Derived>::GradientKernel;

 protected:
  Conv2dGeometry Geometry(const std::vector<Tensor>& inputs) const {
    return GeometryOf(this->attrs_, inputs[1].shape);
  }
};

// What a conv2d gradient algorithm of one function
// (GradientFunctionAlgorithm, e.g. data/direct.cc) is given of one call: the
// forward's geometry for x, x's (and dx's) and y's (and dy's) strides in the
// layout, and the operands.
template <typename T>
struct Conv2dGradientCall : Conv2dGeometry, GradientOperands<T> {
  ImageStrides xs, ys;
};

template <typename T>
Conv2dGradientCall<T> MakeGradientCall(const Conv2dAttrs& attrs,
                                       const std::vector<Tensor>& inputs,
                                       const T* weight, const T* dy) {
  Conv2dGradientCall<T> call;
  static_cast<Conv2dGeometry&>(call) = GeometryOf(attrs, inputs[1].shape);
  call.xs = ImageStridesOf({call.n, call.c, call.h, call.w}, call.layout);
  call.ys = ImageStridesOf({call.n, call.k, call.oh, call.ow}, call.layout);
  call.x = inputs[1].data_as<const T>();
  call.weight = weight;
  call.dy = dy;
  return call;
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_BACKWARD_CONV2D_BACKWARD_H_
