// Every conv_transpose2d algorithm: one of conv2d_backward_data's kernels
// run on the conv2d whose data gradient this layer is
// (ConvTranspose2dAttrs::DataGradientOf), then the bias added. That
// gradient op reads [grad_output, x, y]; here grad_output is this layer's
// input, x (of which only the shape is read: no fused activation) has this
// layer's output shape and y this layer's input shape. The weight tensor is
// the same, [in, out / groups, kh, kw] being conv2d's OIHW for the
// swapped channels.
#ifndef AI3_CORE_OPS_CONV_TRANSPOSE2D_DATA_GRADIENT_KERNEL_H_
#define AI3_CORE_OPS_CONV_TRANSPOSE2D_DATA_GRADIENT_KERNEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/conv2d/backward/data/conv2d_backward_data.h"
#include "core/ops/conv_transpose2d/conv_transpose2d.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

inline Conv2dBackwardDataAttrs GradientAttrsOf(const ConvTranspose2dAttrs& a) {
  Conv2dBackwardDataAttrs g;
  static_cast<Conv2dAttrs&>(g) = a.DataGradientOf();
  return g;
}

// y[n, o, ...] += bias[o] in either layout.
template <typename T>
void AddBias(const ImageDims& d, Layout layout, const T* bias, T* y) {
  const int64_t pixels = d.h * d.w;
  const bool big = d.n * d.c * pixels >= (1 << 15);
  if (layout == Layout::kNHWC) {
    ParallelFor(0, d.n * pixels, big, [&](int64_t p) {
      T* __restrict row = y + p * d.c;
#pragma omp simd
      for (int64_t o = 0; o < d.c; ++o) row[o] += bias[o];
    });
    return;
  }
  ParallelFor(0, d.n * d.c, big, [&](int64_t plane) {
    T* __restrict yp = y + plane * pixels;
    const T b = bias[plane % d.c];
#pragma omp simd
    for (int64_t i = 0; i < pixels; ++i) yp[i] += b;
  });
}

class ViaDataGradientKernel : public Kernel {
 public:
  ViaDataGradientKernel(const ConvTranspose2dAttrs& attrs,
                        const std::vector<Tensor>& params,
                        const Algorithm<Conv2dBackwardDataAttrs>& gradient)
      : attrs_(attrs),
        bias_(attrs.has_bias ? params[1].data : nullptr),
        gradient_(gradient.Prepare(GradientAttrsOf(attrs), {params[0]})) {
    // [grad_output, x, y] of the gradient kernel, kept so that a call
    // allocates nothing (the shapes are overwritten in place).
    inputs_.assign(3, Tensor{nullptr, attrs.dtype, Shape(4)});
  }

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    std::vector<Tensor> inputs(3, Tensor{nullptr, attrs_.dtype, input_shape});
    inputs[1].shape =
        attrs_.OutputShape(Tensor{nullptr, attrs_.dtype, input_shape});
    return static_cast<const MultiInputKernel&>(*gradient_)
        .InputsWorkspaceBytes(inputs);
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    for (int i = 0; i < 4; ++i) {
      inputs_[0].shape[i] = inputs_[2].shape[i] = input.shape[i];
      inputs_[1].shape[i] = output.shape[i];
    }
    inputs_[0].data = input.data;
    static_cast<MultiInputKernel&>(*gradient_)
        .RunInputs(inputs_, output, workspace);
    if (!bias_) return;
    const ImageDims d = ImageDimsOf(output.shape, attrs_.layout);
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      AddBias(d, attrs_.layout, static_cast<const T*>(bias_),
              output.data_as<T>());
    });
  }

 private:
  ConvTranspose2dAttrs attrs_;
  const void* bias_;
  std::unique_ptr<Kernel> gradient_;
  std::vector<Tensor> inputs_;
};

// conv_transpose2d's algorithm running conv2d_backward_data's `kGradient`.
template <const char* kGradient>
class ViaDataGradient : public Algorithm<ConvTranspose2dAttrs> {
 public:
  std::string WhyNot(const ConvTranspose2dAttrs& a) const override {
    try {
      Gradient(a);
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  }
  std::unique_ptr<Kernel> Prepare(
      const ConvTranspose2dAttrs& a,
      const std::vector<Tensor>& params) const override {
    return std::make_unique<ViaDataGradientKernel>(a, params, Gradient(a));
  }

 private:
  static const Algorithm<Conv2dBackwardDataAttrs>& Gradient(
      const ConvTranspose2dAttrs& a) {
    std::string resolved;
    return Registry<Conv2dBackwardDataAttrs>::Get().Resolve(
        kGradient, Device::kCPU, GradientAttrsOf(a), &resolved);
  }
};

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV_TRANSPOSE2D_DATA_GRADIENT_KERNEL_H_
