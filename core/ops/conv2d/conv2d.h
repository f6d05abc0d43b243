// conv2d: the parameters every conv2d algorithm sees, and the geometry of
// one call. Weights are always [out_channels, in_channels / groups, kernel_h,
// kernel_w] (PyTorch's OIHW); the data layout (NCHW or NHWC) is an attribute.
#ifndef AI3_CORE_OPS_CONV2D_CONV2D_H_
#define AI3_CORE_OPS_CONV2D_CONV2D_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/math/epilogue.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

struct Conv2dAttrs {
  static constexpr char kOp[] = "conv2d";

  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  // Asymmetric padding is allowed (Keras "same" with even kernels).
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool has_bias = false;
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;
  // A fused clamp (ReLU, ReLU6) every algorithm applies as it writes the
  // output; see core/math/epilogue.h.
  Activation activation;

  int64_t in_channels_per_group() const { return in_channels / groups; }
  int64_t out_channels_per_group() const { return out_channels / groups; }
  bool is_1x1_unit() const;  // 1x1, stride 1, no padding: a plain GEMM

  // Checks the attributes and the weights: params = {weight[, bias]}.
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

// Everything an algorithm needs to index one call.
struct Conv2dGeometry {
  int64_t n, c, h, w;  // input
  int64_t k, oh, ow;   // output channels and spatial size
  int64_t groups, cg, kg;  // groups, in/out channels per group
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;  // ph/pw: top/left padding
  Layout layout;
};
Conv2dGeometry GeometryOf(const Conv2dAttrs& attrs, const Shape& input_shape);

// What every conv2d kernel keeps: the attributes and the layer's weights.
// Subclasses implement Run<T> for T = float, double; Run dispatches.
template <class Derived>
class Conv2dKernelBase : public WeightBiasKernel<Conv2dAttrs> {
 public:
  using WeightBiasKernel::WeightBiasKernel;

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    Conv2dGeometry g = GeometryOf(attrs_, input.shape);
    if (attrs_.dtype == DType::kFloat64) {
      static_cast<Derived*>(this)->template RunTyped<double>(
          g, input.data_as<const double>(), output.data_as<double>(),
          workspace);
    } else {
      static_cast<Derived*>(this)->template RunTyped<float>(
          g, input.data_as<const float>(), output.data_as<float>(), workspace);
    }
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_CONV2D_H_
