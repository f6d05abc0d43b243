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
#include "core/ops/conv_transpose2d/via_conv2d_kernel.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// C, the conv2d this op is the data gradient of, as it is (its pads may
// be negative: conv2d_backward_data's kernels read only the top/left ones).
inline Conv2dAttrs DataGradientConvOf(const ConvTranspose2dAttrs& a) {
  return a.DataGradientOf();
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
        gradient_(gradient.Prepare(
            AsOp<Conv2dBackwardDataAttrs>(attrs.DataGradientOf()),
            {params[0]})) {
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
using ViaDataGradient =
    ViaConv2d<ConvTranspose2dAttrs, Conv2dBackwardDataAttrs,
              ViaDataGradientKernel, kGradient, &DataGradientConvOf>;

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV_TRANSPOSE2D_DATA_GRADIENT_KERNEL_H_
