// The data gradient of conv2d as a transposed convolution, run by one of
// conv2d's own (forward) algorithms: the "transposed" (conv2d's "default")
// and "winograd" algorithms of conv2d_backward_data.
//
//   dx[ih] = sum over r, oh with oh*sh = ih + ph - r*dh of dy[oh] W[r]
//
// is a stride-1 convolution, with the forward's dilation, of dy with
// (sh - 1) zeros inserted between its rows (and columns), padded by
// P = (kh-1)*dh - ph on top and (kh-1)*dh - pb at the bottom, with the
// kernel flipped (W[kh-1-r]) and its input and output channels swapped per
// group: weight Wt[g*cg + c][kk][r'][s'] = W[g*kg + kk][c][kh-1-r'][kw-1-s'].
// Where the stride is 1 and no pad is negative (the forward's padding
// within the dilated kernel's reach), that is conv2d on dy itself with those
// pads; elsewhere the zero-inserted dy is built in the workspace with the
// pads applied (rows a negative pad cuts off read nothing) and convolved
// without padding. Either way the transposed convolution's output is dx,
// shaped like x.
#ifndef AI3_CORE_OPS_CONV2D_BACKWARD_DATA_TRANSPOSED_KERNEL_H_
#define AI3_CORE_OPS_CONV2D_BACKWARD_DATA_TRANSPOSED_KERNEL_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/ops/conv2d/backward/data/conv2d_backward_data.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Whether the transposed convolution of `a` reads dy in place, its pads
// all >= 0 and its stride 1.
inline bool TransposedReadsInPlace(const Conv2dAttrs& a) {
  const int64_t reach_h = (a.kernel_h - 1) * a.dilation_h;
  const int64_t reach_w = (a.kernel_w - 1) * a.dilation_w;
  return a.stride_h == 1 && a.stride_w == 1 && a.pad_top <= reach_h &&
         a.pad_bottom <= reach_h && a.pad_left <= reach_w &&
         a.pad_right <= reach_w;
}

// The transposed convolution's conv2d parameters.
inline Conv2dAttrs TransposedAttrs(const Conv2dAttrs& a) {
  Conv2dAttrs t;
  t.in_channels = a.out_channels;
  t.out_channels = a.in_channels;
  t.kernel_h = a.kernel_h;
  t.kernel_w = a.kernel_w;
  t.dilation_h = a.dilation_h;
  t.dilation_w = a.dilation_w;
  t.groups = a.groups;
  t.dtype = a.dtype;
  t.layout = a.layout;
  if (TransposedReadsInPlace(a)) {
    const int64_t reach_h = (a.kernel_h - 1) * a.dilation_h;
    const int64_t reach_w = (a.kernel_w - 1) * a.dilation_w;
    t.pad_top = reach_h - a.pad_top;
    t.pad_bottom = reach_h - a.pad_bottom;
    t.pad_left = reach_w - a.pad_left;
    t.pad_right = reach_w - a.pad_right;
  }
  return t;
}

// Empty if conv2d's `algorithm` ("default" included) can take the
// transposed convolution of `a`, else why not, in the registry's words.
inline std::string WhyNotTransposed(const Conv2dAttrs& a,
                                    const std::string& algorithm) {
  // The transposed convolution's pads reach up to the dilated kernel's
  // extent, which conv2d's kernels take only within 2^31 - 1 (as its
  // Validate bounds each padding).
  if ((a.kernel_h - 1) * a.dilation_h > kMaxConv2dSize ||
      (a.kernel_w - 1) * a.dilation_w > kMaxConv2dSize) {
    return "the transposed convolution's padding would exceed 2^31 - 1";
  }
  std::string resolved;
  try {
    Registry<Conv2dAttrs>::Get().Resolve(algorithm, Device::kCPU,
                                         TransposedAttrs(a), &resolved);
  } catch (const Error& e) {
    return std::string("the transposed convolution: ") + e.what();
  }
  return {};
}

class TransposedKernel
    : public Conv2dGradientKernel<Conv2dBackwardDataAttrs, TransposedKernel> {
 public:
  // `forward`: the conv2d algorithm running the transposed convolution
  // ("default" picks one that can take it).
  TransposedKernel(const Conv2dBackwardDataAttrs& attrs,
                   const std::vector<Tensor>& params,
                   const std::string& forward)
      : Conv2dGradientKernel(attrs, params),
        transposed_(TransposedAttrs(attrs)),
        in_place_(TransposedReadsInPlace(attrs)) {
    const int64_t cg = attrs.in_channels_per_group();
    const int64_t kg = attrs.out_channels_per_group();
    const int64_t kh = attrs.kernel_h, kw = attrs.kernel_w;
    flipped_ = ReorderConv2dWeights(
        attrs, weight_, [&](int64_t o, int64_t c, int64_t r, int64_t s) {
          const int64_t grp = o / kg, kk = o % kg;
          return (((grp * cg + c) * kg + kk) * kh + (kh - 1 - r)) * kw +
                 (kw - 1 - s);
        });
    // The forward kernel keeps a pointer to these; they outlive it.
    flipped_params_ = {
        Tensor{flipped_.data(), attrs.dtype, {attrs.in_channels, kg, kh, kw}}};
    std::string resolved;
    forward_ = Registry<Conv2dAttrs>::Get()
                   .Resolve(forward, Device::kCPU, transposed_, &resolved)
                   .Prepare(transposed_, flipped_params_);
    z_.dtype = attrs.dtype;
    z_.layout = attrs.layout;
    z_.shape = Shape(4);
    dx_ = z_;
  }

  size_t ScratchBytes(const std::vector<Tensor>& inputs) const {
    const Shape z = ZShape(inputs);
    return ZBytes(z) + forward_->WorkspaceBytes(z);
  }

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* dx,
                void* scratch) {
    SetZShape(inputs, &z_.shape);
    char* forward_scratch = static_cast<char*>(scratch) + ZBytes(z_.shape);
    if (in_place_) {
      z_.data = const_cast<T*>(dy);  // read only by the forward kernel
    } else {
      z_.data = scratch;
      FillZ(Geometry(inputs), dy, static_cast<T*>(scratch));
    }
    dx_.shape = inputs[1].shape;  // the same length: no allocation
    dx_.data = dx;
    forward_->Run(z_, dx_, forward_scratch);
  }

 private:
  // The transposed convolution's input shape: dy's (in place) or the
  // zero-inserted, padded one's, [N, K, H + (kh-1)*dh, W + (kw-1)*dw] in
  // the layout.
  void SetZShape(const std::vector<Tensor>& inputs, Shape* shape) const {
    if (in_place_) {
      for (int i = 0; i < 4; ++i) (*shape)[i] = inputs[0].shape[i];
      return;
    }
    const Conv2dGeometry g = Geometry(inputs);
    const ImageDims z{g.n, g.k, g.h + (g.kh - 1) * g.dh,
                      g.w + (g.kw - 1) * g.dw};
    const bool nhwc = g.layout == Layout::kNHWC;
    (*shape)[0] = z.n;
    (*shape)[1] = nhwc ? z.h : z.c;
    (*shape)[2] = nhwc ? z.w : z.h;
    (*shape)[3] = nhwc ? z.c : z.w;
  }
  Shape ZShape(const std::vector<Tensor>& inputs) const {
    Shape shape(4);
    SetZShape(inputs, &shape);
    CheckShape(shape, "the transposed convolution's input");
    return shape;
  }
  // The workspace the zero-inserted dy takes (rounded up to 64 bytes, so
  // the forward kernel's scratch after it stays aligned).
  size_t ZBytes(const Shape& z) const {
    if (in_place_) return 0;
    const size_t bytes =
        static_cast<size_t>(NumElements(z)) * SizeOf(attrs_.dtype);
    return (bytes + 63) / 64 * 64;
  }

  // z = zeros, with dy[n, k, oh, ow] at row oh*sh + P, column ow*sw + Q.
  template <typename T>
  void FillZ(const Conv2dGeometry& g, const T* dy, T* z) const {
    const int64_t zh = g.h + (g.kh - 1) * g.dh, zw = g.w + (g.kw - 1) * g.dw;
    const int64_t top = (g.kh - 1) * g.dh - g.ph;
    const int64_t left = (g.kw - 1) * g.dw - g.pw;
    const ImageStrides zs = ImageStridesOf({g.n, g.k, zh, zw}, g.layout);
    const ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    const int64_t count = g.n * g.k * zh * zw;
    ParallelRanges(0, count, count >= (1 << 15), [=](int64_t lo, int64_t hi) {
      std::fill(z + lo, z + hi, T(0));
    });
    ParallelFor(0, g.n * g.oh, count >= (1 << 15), [&](int64_t row) {
      const int64_t n = row / g.oh, oh = row % g.oh;
      const int64_t j = oh * g.sh + top;
      if (j < 0 || j >= zh) return;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t i = ow * g.sw + left;
        if (i < 0 || i >= zw) continue;
        for (int64_t k = 0; k < g.k; ++k) {
          z[n * zs.n + k * zs.c + j * zs.h + i * zs.w] =
              dy[n * ys.n + k * ys.c + oh * ys.h + ow * ys.w];
        }
      }
    });
  }

  Conv2dAttrs transposed_;
  bool in_place_;
  Buffer flipped_;
  std::vector<Tensor> flipped_params_;
  std::unique_ptr<Kernel> forward_;
  // The forward kernel's input and output, kept so a call allocates no
  // Shape.
  Tensor z_, dx_;
};

// conv2d_backward_data's algorithm running the transposed convolution with
// conv2d's `kForward` algorithm.
template <const char* kForward>
class TransposedAlgorithm : public Algorithm<Conv2dBackwardDataAttrs> {
 public:
  std::string WhyNot(const Conv2dBackwardDataAttrs& a) const override {
    return WhyNotTransposed(a, kForward);
  }
  std::unique_ptr<Kernel> Prepare(
      const Conv2dBackwardDataAttrs& a,
      const std::vector<Tensor>& params) const override {
    return std::make_unique<TransposedKernel>(a, params, kForward);
  }
};

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_BACKWARD_DATA_TRANSPOSED_KERNEL_H_
