// conv2d: the parameters every conv2d algorithm sees, and the geometry of
// one call. Weights are always [out_channels, in_channels / groups, kernel_h,
// kernel_w] (PyTorch's OIHW); the data layout (NCHW or NHWC) is an attribute.
#ifndef AI3_CORE_OPS_CONV2D_CONV2D_H_
#define AI3_CORE_OPS_CONV2D_CONV2D_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/math/dispatch.h"
#include "core/math/epilogue.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

// The largest kernel, stride, dilation or padding a conv2d takes (as oneDNN
// and cuDNN, which take them as int32).
inline constexpr int64_t kMaxConv2dSize = (int64_t{1} << 31) - 1;

// The image dims of a conv-like layer's input (conv2d, conv_transpose2d):
// rank 4 in `layout`, of the layer's dtype, with `channels` channels and a
// non-empty image; kShape / kDType naming what differs.
ImageDims CheckImageInput(const Tensor& input, Layout layout, DType dtype,
                          int64_t channels);

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
  int64_t n, c, h, w;                      // input
  int64_t k, oh, ow;                       // output channels and spatial size
  int64_t groups, cg, kg;                  // groups, in/out channels per group
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;  // ph/pw: top/left padding
  Layout layout;
};
Conv2dGeometry GeometryOf(const Conv2dAttrs& attrs, const Shape& input_shape);

// For an algorithm that takes stride 1 and dilation 1 only (the Winograd and
// FFT transforms): "<who> needs stride 1, got 2,2" (or dilation), empty if
// `attrs` has both.
std::string WhyNotUnitStrideDilation(const Conv2dAttrs& attrs,
                                     const std::string& who);

// Whether winograd runs a layer with channels in the lanes (winograd.cc):
// NHWC, ungrouped, input and output channels in whole vectors of `lanes`.
// conv2d's "default" list (conv2d_schema.cc) prefers winograd there.
inline bool WinogradChannelsInLanes(const Conv2dAttrs& attrs, int64_t lanes) {
  return attrs.layout == Layout::kNHWC && attrs.groups == 1 &&
         attrs.in_channels % lanes == 0 && attrs.out_channels % lanes == 0;
}

// The operands of one call that the packed CPU kernels (direct, implicit
// gemm) share; each one's Problem adds its own. Filled by
// Conv2dKernelBase::SetOperands.
template <typename T>
struct Conv2dOperands {
  Conv2dGeometry g;
  ImageStrides xs, ys;  // input and output strides in their layout
  const T* x;
  T* y;
  const T* packed;  // the weights in the kernel's order
  const T* bias;    // or nullptr
  Activation::Bounds<T> act;
  int threads;  // the threads the workspace was sized for
};

// The OIHW weights of a conv2d with `attrs` copied into another order:
// element (o, c, r, s) goes to index(o, c, r, s). For the forward's gemm and
// kn2row (Conv2dKernelBase::ReorderedWeights) and the gradients' gemm.
template <class Index>
Buffer ReorderConv2dWeights(const Conv2dAttrs& attrs, const void* weight,
                            const Index& index) {
  const int64_t k = attrs.out_channels;
  const int64_t cg = attrs.in_channels_per_group();
  const int64_t kh = attrs.kernel_h, kw = attrs.kernel_w;
  Buffer out(static_cast<size_t>(k * cg * kh * kw) * SizeOf(attrs.dtype));
  DispatchFloat(attrs.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* src = static_cast<const T*>(weight);
    T* dst = out.as<T>();
    for (int64_t o = 0; o < k; ++o)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t r = 0; r < kh; ++r)
          for (int64_t s = 0; s < kw; ++s)
            dst[index(o, c, r, s)] = src[((o * cg + c) * kh + r) * kw + s];
    return 0;
  });
  return out;
}

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

 protected:
  // Everything but `packed`, `bias` and `threads` follows from the call.
  template <typename T>
  void SetOperands(Conv2dOperands<T>& p, const Conv2dGeometry& g, const T* x,
                   T* y, const T* packed, const T* bias, int threads) const {
    p.g = g;
    p.xs = ImageStridesOf({g.n, g.c, g.h, g.w}, g.layout);
    p.ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    p.x = x;
    p.y = y;
    p.packed = packed;
    p.bias = bias;
    p.act = attrs_.activation.As<T>();
    p.threads = threads;
  }

  // The weights copied once into another order (gemm, kn2row); see
  // ReorderConv2dWeights.
  template <class Index>
  Buffer ReorderedWeights(const Index& index) const {
    return ReorderConv2dWeights(attrs_, weight_, index);
  }

  // The weights packed once for a register-blocked kernel (implicit gemm,
  // smm): output channels in slivers of `rows`, each sliver laid out
  // K-major so a step of the accumulation reads its `rows` scalars side by
  // side:
  //   packed[group][sliver][kidx][i] = W[group*kg + sliver*rows + i][kidx]
  // with kidx over (c, r, s) of the group's input channels, zero for rows
  // past the group's last output channel.
  Buffer PackWeightSlivers(int64_t rows) const {
    const int64_t groups = attrs_.groups;
    const int64_t kg = attrs_.out_channels_per_group();
    const int64_t depth =
        attrs_.in_channels_per_group() * attrs_.kernel_h * attrs_.kernel_w;
    const int64_t slivers = (kg + rows - 1) / rows;
    Buffer packed(static_cast<size_t>(groups * slivers * depth * rows) *
                  SizeOf(attrs_.dtype));
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* src = this->template weight<T>();
      T* dst = packed.as<T>();
      for (int64_t grp = 0; grp < groups; ++grp)
        for (int64_t sl = 0; sl < slivers; ++sl)
          for (int64_t kidx = 0; kidx < depth; ++kidx)
            for (int64_t i = 0; i < rows; ++i) {
              const int64_t m = sl * rows + i;
              dst[((grp * slivers + sl) * depth + kidx) * rows + i] =
                  m < kg ? src[(grp * kg + m) * depth + kidx] : T(0);
            }
      return 0;
    });
    return packed;
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_CONV2D_H_
