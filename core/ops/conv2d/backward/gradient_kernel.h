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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/math/epilogue.h"
#include "core/ops/backward.h"  // GradientTarget, GradientOpName
#include "core/parallel.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

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
    Fail(ErrorKind::kShape, kGradOutputName, " is ", ToString(inputs[0].shape),
         " but must have y's shape ", ToString(inputs[2].shape));
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

// out[j] = the sum over i < rows of a[i*cols + j]: a bias gradient, the
// sum of grad_output over every dimension but the channels when they are
// the last (linear; conv2d in NHWC). Each thread takes a range of columns
// and reads every row's piece of it in memory order (per column, the reads
// would be one element every `cols`: 190 ms instead of a few for a
// 1960 x 3072 gradient).
template <typename T>
void ColumnSums(int64_t rows, int64_t cols, const T* a, T* out) {
  ParallelRanges(0, cols, rows * cols >= (1 << 16),
                 [=](int64_t lo, int64_t hi) {
                   std::fill(out + lo, out + hi, T(0));
                   for (int64_t i = 0; i < rows; ++i) {
                     const T* row = a + i * cols;
#pragma omp simd
                     for (int64_t j = lo; j < hi; ++j) out[j] += row[j];
                   }
                 });
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

// The operands of one call that every gradient function (below) is given,
// in its forward's call (LinearGradientCall, Conv2dGradientCall): x, the
// weight, and grad_output masked by the fused activation.
template <typename T>
struct GradientOperands {
  const T* x;
  const T* weight;
  const T* dy;
};

// The shell of a gradient kernel that is one function of the call (no
// scratch, nothing prepared), so that such an algorithm's file holds only
// that function, as function_kernel.h does for forward ops:
//   struct Direct {
//     template <typename T>
//     static void Run(const LinearGradientCall<T>& c, T* dx);
//   };
//   AI3_REGISTER_ALGORITHM(LinearBackwardDataAttrs, "direct", Device::kCPU,
//                          GradientFunctionAlgorithm<LinearBackwardDataAttrs,
//                                                    Direct>);
// The call is what the forward's package makes of the inputs for every
// such function: MakeGradientCall(attrs, inputs, weight, dy), found
// beside the forward's gradient attributes (linear_backward.h,
// conv2d_backward.h).
template <class Attrs, class Fn>
class GradientFunctionKernel
    : public GradientKernel<Attrs, GradientFunctionKernel<Attrs, Fn>> {
 public:
  using GradientKernel<Attrs, GradientFunctionKernel>::GradientKernel;

  size_t ScratchBytes(const std::vector<Tensor>&) const { return 0; }

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* out,
                void*) const {
    Fn::Run(
        MakeGradientCall(this->attrs_, inputs, this->template weight<T>(), dy),
        out);
  }
};

template <class Attrs, class Fn>
using GradientFunctionAlgorithm =
    KernelAlgorithm<Attrs, GradientFunctionKernel<Attrs, Fn>>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_BACKWARD_GRADIENT_KERNEL_H_
