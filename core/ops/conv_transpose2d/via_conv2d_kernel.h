// What conv_transpose2d's algorithms share: ViaConv2d, an algorithm that
// runs one of a conv2d op's algorithms. The forward runs conv2d_backward_data
// on the conv2d C it is the data gradient of (data_gradient_kernel.h); the
// gradients (conv_transpose2d.h) run conv2d's and conv2d_backward_weight's
// on C as a conv2d layer can run it, with dy as C's input.
//
// C's bottom / right pads are pad - output_padding, negative where
// output_padding is the larger. conv2d takes no negative pad, but a pad of
// -c means its windows never reach dy's last c rows (those output_padding
// added, which no input element reaches): C with pad 0 on dy without them
// is the same convolution. So dy is cropped, into the workspace, when it
// has to be.
#ifndef AI3_CORE_OPS_CONV_TRANSPOSE2D_VIA_CONV2D_KERNEL_H_
#define AI3_CORE_OPS_CONV_TRANSPOSE2D_VIA_CONV2D_KERNEL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/ops/conv_transpose2d/conv_transpose2d.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct AdjointConv {
  Conv2dAttrs conv;        // C, its pads >= 0
  int64_t crop_h, crop_w;  // rows / columns of dy C does not read
};

inline AdjointConv AdjointOf(const ConvTranspose2dAttrs& a) {
  AdjointConv r{a.DataGradientOf(), 0, 0};
  r.crop_h = std::max<int64_t>(0, -r.conv.pad_bottom);
  r.crop_w = std::max<int64_t>(0, -r.conv.pad_right);
  r.conv.pad_bottom += r.crop_h;
  r.conv.pad_right += r.crop_w;
  return r;
}

// Workspace offsets are kept at this alignment (the conv kernels' vectors).
constexpr size_t kWorkspaceAlign = 64;

// dy as C reads it: dy itself, or its crop, which the workspace holds
// (CropBytes bytes at its start; the rest is the conv's).
class AdjointInput {
 public:
  explicit AdjointInput(const ConvTranspose2dAttrs& a)
      : adjoint_(AdjointOf(a)) {}

  const Conv2dAttrs& conv() const { return adjoint_.conv; }

  Shape ShapeOf(const Shape& dy) const {
    if (!Cropped()) return dy;
    const bool nhwc = adjoint_.conv.layout == Layout::kNHWC;
    Shape s = dy;
    s[nhwc ? 1 : 2] -= adjoint_.crop_h;
    s[nhwc ? 2 : 3] -= adjoint_.crop_w;
    return s;
  }

  size_t CropBytes(const Tensor& dy) const {
    if (!Cropped()) return 0;
    const size_t bytes =
        static_cast<size_t>(NumElements(ShapeOf(dy.shape))) * SizeOf(dy.dtype);
    return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
  }

  // dy, or its crop written to the workspace's start.
  Tensor Of(const Tensor& dy, void* workspace) const {
    if (!Cropped()) return dy;
    Tensor out{workspace, dy.dtype, ShapeOf(dy.shape)};
    const bool nhwc = adjoint_.conv.layout == Layout::kNHWC;
    const ImageDims in = ImageDimsOf(dy.shape, adjoint_.conv.layout);
    const ImageDims kept = ImageDimsOf(out.shape, adjoint_.conv.layout);
    // Rows of a plane: NCHW a row is kept.w elements of one channel, NHWC
    // kept.w pixels of C channels.
    const int64_t unit = nhwc ? in.c : 1;
    const int64_t planes = nhwc ? in.n : in.n * in.c;
    const size_t size = SizeOf(dy.dtype);
    const size_t row = static_cast<size_t>(kept.w * unit) * size;
    const char* src = static_cast<const char*>(dy.data);
    char* dst = static_cast<char*>(workspace);
    ParallelFor(0, planes * kept.h, out.numel() >= (1 << 15), [&](int64_t r) {
      const int64_t p = r / kept.h, h = r % kept.h;
      std::memcpy(dst + r * row, src + ((p * in.h + h) * in.w * unit) * size,
                  row);
    });
    return out;
  }

 private:
  bool Cropped() const { return adjoint_.crop_h > 0 || adjoint_.crop_w > 0; }

  AdjointConv adjoint_;
};

// C for the gradients: pads clamped at 0, dy cropped (above).
inline Conv2dAttrs AdjointConvOf(const ConvTranspose2dAttrs& a) {
  return AdjointOf(a).conv;
}

// c as the attributes of OpAttrs, conv2d or one of its gradient ops.
template <class OpAttrs>
OpAttrs AsOp(const Conv2dAttrs& c) {
  OpAttrs op;
  static_cast<Conv2dAttrs&>(op) = c;
  return op;
}

// A conv_transpose2d algorithm (Attrs: the op's or one of its gradients')
// that runs the algorithm `kName` of ConvOpAttrs's op (conv2d, or one of
// its gradients) on the conv2d kConvOf gives for the layer: Kernel(attrs,
// params, that algorithm). Its WhyNot is that algorithm's, for that conv.
template <class Attrs, class ConvOpAttrs, class Kernel, const char* kName,
          Conv2dAttrs (*kConvOf)(const ConvTranspose2dAttrs&)>
class ViaConv2d : public Algorithm<Attrs> {
 public:
  std::string WhyNot(const Attrs& a) const override {
    try {
      Resolve(a);
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  }
  std::unique_ptr<ai3::Kernel> Prepare(
      const Attrs& a, const std::vector<Tensor>& params) const override {
    return std::make_unique<Kernel>(a, params, Resolve(a));
  }

 private:
  static const Algorithm<ConvOpAttrs>& Resolve(const Attrs& a) {
    std::string resolved;
    return Registry<ConvOpAttrs>::Get().Resolve(
        kName, Device::kCPU, AsOp<ConvOpAttrs>(kConvOf(a)), &resolved);
  }
};

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV_TRANSPOSE2D_VIA_CONV2D_KERNEL_H_
