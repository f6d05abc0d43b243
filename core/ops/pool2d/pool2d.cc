#include "core/ops/pool2d/pool2d.h"

#include <utility>

#include "core/errors.h"

namespace ai3 {
namespace {

// Floor division for a possibly negative numerator (PyTorch's div_rtn).
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

void PoolNoParams(const char* op, const std::vector<Tensor>& params) {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument, op, " takes no parameter tensors, got ",
         params.size());
  }
}

int64_t PoolOutputSize(int64_t in, int64_t kernel, int64_t pad_before,
                       int64_t pad_after, int64_t stride, int64_t dilation,
                       bool ceil_mode) {
  int64_t out = FloorDiv(in + pad_before + pad_after - dilation * (kernel - 1) -
                             1 + (ceil_mode ? stride - 1 : 0),
                         stride) +
                1;
  // The last window must start inside the input or its leading padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_before) --out;
  return out;
}

ImageDims PoolInputDims(const Tensor& input, Layout layout) {
  ImageDims in = Rank4InputDims(input, layout);
  if (in.n < 0 || in.c < 1 || in.h < 1 || in.w < 1) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") has ", in.c, " channels and spatial size ", in.h, "x", in.w,
         "; all must be >= 1 (only the batch may be empty)");
  }
  return in;
}

void Pool2dWindow::ValidateWindow() const {
  auto positive = [](const char* what, int64_t v) {
    if (v < 1) {
      Fail(ErrorKind::kInvalidArgument, what, " must be >= 1, got ", v);
    }
  };
  positive("kernel_h", kernel_h);
  positive("kernel_w", kernel_w);
  positive("stride_h", stride_h);
  positive("stride_w", stride_w);
  positive("dilation_h", dilation_h);
  positive("dilation_w", dilation_w);
  if (pad_top < 0 || pad_bottom < 0 || pad_left < 0 || pad_right < 0) {
    Fail(ErrorKind::kInvalidArgument, "padding must be >= 0, got top ", pad_top,
         ", bottom ", pad_bottom, ", left ", pad_left, ", right ", pad_right);
  }
  // PyTorch takes these as int32 (it refuses 2^31); so does ai3, which
  // keeps PoolOutputSize's arithmetic (in + padding - dilation * (kernel - 1)
  // + stride) far inside int64.
  for (const auto& [what, v] :
       {std::pair<const char*, int64_t>{"kernel_h", kernel_h},
        {"kernel_w", kernel_w},
        {"stride_h", stride_h},
        {"stride_w", stride_w},
        {"dilation_h", dilation_h},
        {"dilation_w", dilation_w}}) {
    if (v > kMaxPoolSize) {
      Fail(ErrorKind::kInvalidArgument, what, " must be at most ", kMaxPoolSize,
           " (2^31 - 1), got ", v);
    }
  }
  if (pad_top > kernel_h / 2 || pad_bottom > kernel_h / 2 ||
      pad_left > kernel_w / 2 || pad_right > kernel_w / 2) {
    Fail(ErrorKind::kInvalidArgument,
         "padding should be at most half of kernel size, got padding top ",
         pad_top, ", bottom ", pad_bottom, ", left ", pad_left, ", right ",
         pad_right, " for a ", kernel_h, "x", kernel_w, " kernel");
  }
}

Shape Pool2dWindow::WindowOutputShape(const Tensor& input) const {
  ImageDims in = PoolInputDims(input, layout);
  const int64_t oh = PoolOutputSize(in.h, kernel_h, pad_top, pad_bottom,
                                    stride_h, dilation_h, ceil_mode);
  const int64_t ow = PoolOutputSize(in.w, kernel_w, pad_left, pad_right,
                                    stride_w, dilation_w, ceil_mode);
  if (oh < 1 || ow < 1) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") gives an output of spatial size ", oh, "x", ow,
         ", which is too small: the ", kernel_h, "x", kernel_w,
         " kernel with dilation ", dilation_h, "x", dilation_w,
         " does not fit the padded ", in.h + pad_top + pad_bottom, "x",
         in.w + pad_left + pad_right, " input");
  }
  Shape out = ImageShape({in.n, in.c, oh, ow}, layout);
  CheckShape(out, "output");
  return out;
}

void MaxPool2dAttrs::Validate(const std::vector<Tensor>& params) const {
  ValidateWindow();
  PoolNoParams(kOp, params);
}

Shape MaxPool2dAttrs::OutputShape(const Tensor& input) const {
  return WindowOutputShape(input);
}

void AvgPool2dAttrs::Validate(const std::vector<Tensor>& params) const {
  ValidateWindow();
  if (dilation_h != 1 || dilation_w != 1) {
    Fail(ErrorKind::kInvalidArgument,
         "average pooling has no dilation; dilation must be 1x1, got ",
         dilation_h, "x", dilation_w);
  }
  if (divisor_override < 0) {
    Fail(ErrorKind::kInvalidArgument,
         "divisor_override must be >= 1, or 0 for none; got ",
         divisor_override);
  }
  PoolNoParams(kOp, params);
}

Shape AvgPool2dAttrs::OutputShape(const Tensor& input) const {
  return WindowOutputShape(input);
}

void AdaptiveAvgPool2dAttrs::ValidateOutputSize() const {
  if (output_h < 1 || output_w < 1) {
    Fail(ErrorKind::kInvalidArgument, "output size must be >= 1x1, got ",
         output_h, "x", output_w);
  }
}

void AdaptiveAvgPool2dAttrs::Validate(const std::vector<Tensor>& params) const {
  ValidateOutputSize();
  PoolNoParams(kOp, params);
}

Shape AdaptiveAvgPool2dAttrs::OutputShape(const Tensor& input) const {
  ImageDims in = PoolInputDims(input, layout);
  Shape out = ImageShape({in.n, in.c, output_h, output_w}, layout);
  CheckShape(out, "output");
  return out;
}

Pool2dGeometry Pool2dGeometryOf(const Pool2dWindow& a,
                                const Shape& input_shape) {
  // Runs on every forward pass, after OutputShape accepted the input: the
  // output size is computed directly, building no Shape (which would
  // allocate; a Model's forward allocates nothing).
  const ImageDims in = ImageDimsOf(input_shape, a.layout);
  const ImageDims out{in.n, in.c,
                      PoolOutputSize(in.h, a.kernel_h, a.pad_top, a.pad_bottom,
                                     a.stride_h, a.dilation_h, a.ceil_mode),
                      PoolOutputSize(in.w, a.kernel_w, a.pad_left, a.pad_right,
                                     a.stride_w, a.dilation_w, a.ceil_mode)};
  return {in.n,
          in.c,
          in.h,
          in.w,
          out.h,
          out.w,
          a.kernel_h,
          a.kernel_w,
          a.stride_h,
          a.stride_w,
          a.pad_top,
          a.pad_bottom,
          a.pad_left,
          a.pad_right,
          a.dilation_h,
          a.dilation_w,
          ImageStridesOf(in, a.layout),
          ImageStridesOf(out, a.layout)};
}

Pool2dGeometry Pool2dGeometryOf(const AdaptiveAvgPool2dAttrs& a,
                                const Shape& input_shape) {
  const ImageDims in = ImageDimsOf(input_shape, a.layout);
  const ImageDims out{in.n, in.c, a.output_h, a.output_w};
  Pool2dGeometry g{};
  g.n = in.n;
  g.c = in.c;
  g.h = in.h;
  g.w = in.w;
  g.oh = out.h;
  g.ow = out.w;
  g.xs = ImageStridesOf(in, a.layout);
  g.ys = ImageStridesOf(out, a.layout);
  return g;
}

}  // namespace ai3
