// pool2d: max, average and adaptive average pooling over the spatial
// dimensions of a rank-4 image tensor, with PyTorch's exact semantics
// (output sizes, ceil_mode, padding limits, average divisors). No weights; the
// dtype, float32 or float64, is the input's. Each op is its own layer kind
// with its own attributes:
//   MaxPool2dAttrs          "maxpool2d"
//   AvgPool2dAttrs          "avgpool2d"
//   AdaptiveAvgPool2dAttrs  "adaptiveavgpool2d"
// and each its input gradient, <op>_backward_data (core/ops/backward.h).
#ifndef AI3_CORE_OPS_POOL2D_POOL2D_H_
#define AI3_CORE_OPS_POOL2D_POOL2D_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/ops/backward.h"
#include "core/ops/elementwise.h"  // AI3_HOST_DEVICE
#include "core/tensor.h"

namespace ai3 {

// The largest kernel, stride or dilation a pooling window takes (PyTorch's
// int32 limit; padding is at most half the kernel).
inline constexpr int64_t kMaxPoolSize = (int64_t{1} << 31) - 1;

// The sliding window max and average pooling share. Unlike PyTorch, stride
// has no "same as the kernel" default here: frontends fill it in.
struct Pool2dWindow {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  // Asymmetric padding is allowed; each side at most half the kernel.
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  bool ceil_mode = false;
  Layout layout = Layout::kNCHW;

  // Throws kInvalidArgument for a kernel, stride or dilation < 1 and for
  // padding below 0 or above half the kernel, as PyTorch does.
  void ValidateWindow() const;
  // Checks a rank-4 input with non-empty channel and spatial dimensions and
  // returns the output shape (in `layout` order). Throws kShape when the
  // window leaves no output.
  Shape WindowOutputShape(const Tensor& input) const;
};

// PyTorch's pooling_output_shape for one dimension:
//   out = floor_or_ceil((in + pad_before + pad_after - dilation*(k-1) - 1)
//                       / stride) + 1,
// and with ceil_mode, one less if the last window would start at or after
// in + pad_before (it must start inside the input or the leading padding).
// May return <= 0 when the padded input is smaller than the window.
int64_t PoolOutputSize(int64_t in, int64_t kernel, int64_t pad_before,
                       int64_t pad_after, int64_t stride, int64_t dilation,
                       bool ceil_mode);

// Throws kInvalidArgument naming `op` unless `params` is empty (no pool
// has weights).
void PoolNoParams(const char* op, const std::vector<Tensor>& params);

// The spatial dims of a rank-4 pooling input; throws kShape for another rank
// or an empty channel/spatial dimension (an empty batch is fine).
ImageDims PoolInputDims(const Tensor& input, Layout layout);

struct MaxPool2dAttrs : Pool2dWindow {
  static constexpr char kOp[] = "maxpool2d";

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

struct AvgPool2dAttrs : Pool2dWindow {
  static constexpr char kOp[] = "avgpool2d";

  // Whether padded positions count in the divisor (PyTorch's default: yes).
  bool count_include_pad = true;
  // If > 0, every window's sum is divided by this instead; 0 means none.
  int64_t divisor_override = 0;

  // As Pool2dWindow, and dilation must be 1 (average pooling has none).
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

struct AdaptiveAvgPool2dAttrs {
  static constexpr char kOp[] = "adaptiveavgpool2d";

  // The output's spatial size. Output row i averages input rows
  // floor(i * in_h / output_h) to ceil((i + 1) * in_h / output_h) - 1, and
  // likewise for columns.
  int64_t output_h = 1, output_w = 1;
  Layout layout = Layout::kNCHW;

  // Throws kInvalidArgument for an output size below 1x1.
  void ValidateOutputSize() const;
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

// The gradients w.r.t. the pools' inputs (pool2d_backward.h): maxpool2d's
// goes to the first maximum of each window, in window order, as PyTorch's
// (a NaN wins over any number, and a later NaN over an earlier one).
struct MaxPool2dBackwardDataAttrs : DataGradientAttrs<MaxPool2dAttrs> {
  static constexpr char kOp[] = "maxpool2d_backward_data";
};
struct AvgPool2dBackwardDataAttrs : DataGradientAttrs<AvgPool2dAttrs> {
  static constexpr char kOp[] = "avgpool2d_backward_data";
};
struct AdaptiveAvgPool2dBackwardDataAttrs
    : DataGradientAttrs<AdaptiveAvgPool2dAttrs> {
  static constexpr char kOp[] = "adaptiveavgpool2d_backward_data";
};

// Everything a sliding-window kernel needs to index one call.
struct Pool2dGeometry {
  int64_t n, c, h, w;  // input
  int64_t oh, ow;      // output
  int64_t kh, kw, sh, sw, pt, pb, pl, pr, dh, dw;
  ImageStrides xs, ys;  // element strides of input and output
};
Pool2dGeometry Pool2dGeometryOf(const Pool2dWindow& window,
                                const Shape& input_shape);
// The same for an adaptive pool (adaptiveavgpool2d, adaptivemaxpool2d):
// the sizes and strides, with no window (kernel, stride, padding and
// dilation 0); its windows are AdaptiveSpan's.
Pool2dGeometry Pool2dGeometryOf(const AdaptiveAvgPool2dAttrs& attrs,
                                const Shape& input_shape);

// An adaptive pool's window along one dimension: output o of `out` reads
// input [begin, end) of `in`, floor(o * in / out) to ceil((o + 1) * in /
// out), written as PyTorch does to keep the products small. For host and
// device code (the CUDA pools use it too).
struct PoolSpan {
  int64_t begin, end;
};
AI3_HOST_DEVICE inline PoolSpan AdaptiveSpan(int64_t o, int64_t out,
                                             int64_t in) {
  return {(o / out) * in + ((o % out) * in) / out,
          1 + ((o + 1) * in - 1) / out};
}

// The taps [*lo, *hi) of a window starting at `start` with `dilation`
// between its `kernel` taps that land inside [0, size): kernels loop over
// these instead of testing every tap. For host and device code.
AI3_HOST_DEVICE inline void PoolTapRange(int64_t start, int64_t kernel,
                                         int64_t dilation, int64_t size,
                                         int64_t* lo, int64_t* hi) {
  *lo = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  *hi = start >= size ? 0 : (size - 1 - start) / dilation + 1;
  if (*hi > kernel) *hi = kernel;
  if (*hi < *lo) *hi = *lo;
}

// One average-pooling window along one dimension, PyTorch's way: [begin,
// end) in the input and the extent `padded` that count_include_pad divides
// by (avgpool2d's and avgpool3d's forwards, avgpool2d's gradient).
struct AvgSpan {
  int64_t begin, end, padded;
};
inline AvgSpan AvgSpanOf(int64_t o, int64_t stride, int64_t pad_before,
                         int64_t pad_after, int64_t kernel, int64_t size) {
  const int64_t start = o * stride - pad_before;
  const int64_t end = std::min(start + kernel, size + pad_after);
  return {std::max<int64_t>(start, 0), std::min(end, size), end - start};
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_POOL2D_POOL2D_H_
