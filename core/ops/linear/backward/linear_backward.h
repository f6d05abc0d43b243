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
#include "core/parallel.h"
#include "core/tensor.h"

namespace ai3 {

// The output is the target's gradient, shaped like x, the weight
// (out_features, in_features) or the bias (out_features,); the bias
// gradient (grad_output summed over every leading dimension) is defined
// whether or not the layer has a bias.
template <GradientTarget kTarget>
struct LinearGradientAttrs : LinearAttrs {
  static constexpr const char* kOp =
      GradientOpName(kTarget, "linear_backward_data", "linear_backward_weight",
                     "linear_backward_bias");

  int MinInputs() const { return 3; }
  int MaxInputs() const { return 3; }

  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    CheckGradientInputs(inputs,
                        ForwardOutputOf(inputs[1], [&](const Tensor& x) {
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

// The "direct" algorithms' one loop: every output element as a plain dot
// product, out[i*cols + j] = sum over t < len of
// a[i*a_row + t*a_step] * b[j*b_col + t*b_step] (OpenMP over the outputs).
// dx = dy W and dW = dy^T x are each one choice of strides.
template <typename T>
void StridedDots(int64_t rows, int64_t cols, int64_t len, const T* a,
                 int64_t a_row, int64_t a_step, const T* b, int64_t b_col,
                 int64_t b_step, T* out) {
  ParallelFor(0, rows * cols, rows * cols * len >= (1 << 16), [&](int64_t e) {
    const T* ai = a + (e / cols) * a_row;
    const T* bj = b + (e % cols) * b_col;
    T acc = 0;
    for (int64_t t = 0; t < len; ++t) acc += ai[t * a_step] * bj[t * b_step];
    out[e] = acc;
  });
}

// What a linear gradient algorithm (GradientFunctionAlgorithm, e.g.
// data/direct.cc) is given of one call: x as `rows` (the product of its
// leading dimensions) x `in`, the weight `out` x `in`, and grad_output
// (masked by the fused activation) `rows` x `out`.
template <typename T>
struct LinearGradientCall : GradientOperands<T> {
  int64_t rows, in, out;
};

template <typename T>
LinearGradientCall<T> MakeGradientCall(const LinearAttrs& attrs,
                                       const std::vector<Tensor>& inputs,
                                       const T* w, const T* dy) {
  return {{inputs[1].data_as<const T>(), w, dy},
          inputs[1].numel() / attrs.in_features,
          attrs.in_features,
          attrs.out_features};
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_LINEAR_BACKWARD_LINEAR_BACKWARD_H_
