// What the gradient ops of conv2d and linear (core/ops/conv2d/backward,
// core/ops/linear/backward) share: the check of their three inputs and the
// kernel base that runs them. It lives here, the first of the two, and
// linear's gradients include it, rather than in either forward package.
//
// The backward contract (issue 16): a gradient op takes exactly its forward
// op's attributes and weights, and reads [grad_output, x, y] — the gradient
// of the forward's output, the forward's input and its output.
#ifndef AI3_CORE_OPS_CONV2D_BACKWARD_GRADIENT_KERNEL_H_
#define AI3_CORE_OPS_CONV2D_BACKWARD_GRADIENT_KERNEL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/math/epilogue.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace ai3 {

// What a gradient op differentiates its forward's loss with respect to: the
// input x (op F_backward_data) or one of F's weights (F_backward_<weight>).
enum class GradientTarget { kData, kWeight, kBias };

// The names of the three inputs, for errors.
inline constexpr char kGradOutputName[] = "input 0 (grad_output)";
inline constexpr char kForwardInputName[] = "input 1 (x)";
inline constexpr char kForwardOutputName[] = "input 2 (y)";

// kShape unless y has `forward_output` (the forward's output shape for x)
// and grad_output has y's shape.
inline void CheckGradientInputs(const std::vector<Tensor>& inputs,
                                const Shape& forward_output) {
  if (inputs[2].shape != forward_output) {
    Fail(ErrorKind::kShape, kForwardOutputName, " is ",
         ToString(inputs[2].shape), " but the forward's output for x ",
         ToString(inputs[1].shape), " is ", ToString(forward_output));
  }
  if (inputs[0].shape != inputs[2].shape) {
    Fail(ErrorKind::kShape, kGradOutputName, " is ",
         ToString(inputs[0].shape), " but must have y's shape ",
         ToString(inputs[2].shape));
  }
}

// Runs `check(x)` (the forward's own input check and output shape) with
// errors saying they are about input 1, x.
template <class Check>
Shape ForwardOutputOf(const Tensor& x, Check check) {
  try {
    return check(x);
  } catch (const Error& e) {
    throw e.WithContext(kForwardInputName);
  }
}

// The base of a gradient kernel of an op whose Attrs have `dtype` and a
// fused `activation` (conv2d, linear), params[0] being its weight.
// Derived implements
//   size_t ScratchBytes(const std::vector<Tensor>& inputs) const;
//   template <typename T> void RunTyped(const std::vector<Tensor>& inputs,
//                                       const T* dy, T* out, void* scratch);
// where dy is the gradient at the forward's pre-activation output: with a
// fused clamp (ReLU, ReLU6), y = clamp(z), so dL/dz = grad_output where
// min < y < max and 0 where the clamp held y at a bound (as torch's
// threshold_backward / hardtanh_backward do); without one, grad_output
// itself. That masked copy takes the start of the workspace.
template <class Attrs, class Derived>
class GradientKernel : public MultiInputKernel {
 public:
  GradientKernel(const Attrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs), weight_(params[0].data) {}

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    return MaskBytes(inputs[0]) +
           static_cast<const Derived*>(this)->ScratchBytes(inputs);
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = inputs[0].data_as<const T>();
      char* scratch = static_cast<char*>(workspace);
      const auto act = attrs_.activation.template As<T>();
      if (act.enabled) {
        T* masked = reinterpret_cast<T*>(scratch);
        const T* y = inputs[2].data_as<const T>();
        const T lo = act.lo, hi = act.hi;
        const int64_t count = inputs[0].numel();
        ParallelRanges(0, count, count >= (1 << 15),
                       [=](int64_t begin, int64_t end) {
                         for (int64_t i = begin; i < end; ++i) {
                           masked[i] = (y[i] > lo && y[i] < hi) ? dy[i] : T(0);
                         }
                       });
        dy = masked;
        scratch += MaskBytes(inputs[0]);
      }
      static_cast<Derived*>(this)->template RunTyped<T>(
          inputs, dy, output.data_as<T>(), scratch);
      return 0;
    });
  }

 protected:
  template <typename T>
  const T* weight() const {
    return static_cast<const T*>(weight_);
  }

  Attrs attrs_;
  const void* weight_;

 private:
  // The masked grad_output's bytes, rounded up to 64 so what follows in the
  // workspace stays aligned for the vector loops.
  size_t MaskBytes(const Tensor& grad_output) const {
    if (!attrs_.activation.enabled) return 0;
    const size_t bytes =
        static_cast<size_t>(grad_output.numel()) * SizeOf(attrs_.dtype);
    return (bytes + 63) / 64 * 64;
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_BACKWARD_GRADIENT_KERNEL_H_
