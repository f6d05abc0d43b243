#include "core/ops/conv2d/conv2d.h"

#include <string>
#include <utility>

#include "core/errors.h"

namespace ai3 {

std::string WhyNotUnitStrideDilation(const Conv2dAttrs& a,
                                     const std::string& who) {
  if (a.stride_h != 1 || a.stride_w != 1) {
    return who + " needs stride 1, got " + std::to_string(a.stride_h) + "," +
           std::to_string(a.stride_w);
  }
  if (a.dilation_h != 1 || a.dilation_w != 1) {
    return who + " needs dilation 1, got " + std::to_string(a.dilation_h) +
           "," + std::to_string(a.dilation_w);
  }
  return {};
}

bool Conv2dAttrs::is_1x1_unit() const {
  return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 &&
         pad_top == 0 && pad_bottom == 0 && pad_left == 0 && pad_right == 0;
}

void Conv2dAttrs::Validate(const std::vector<Tensor>& params) const {
  auto positive = [](const char* what, int64_t v) {
    if (v < 1)
      Fail(ErrorKind::kInvalidArgument, what, " must be >= 1, got ", v);
  };
  positive("in_channels", in_channels);
  positive("out_channels", out_channels);
  positive("kernel height", kernel_h);
  positive("kernel width", kernel_w);
  positive("stride", stride_h);
  positive("stride", stride_w);
  positive("dilation", dilation_h);
  positive("dilation", dilation_w);
  positive("groups", groups);
  if (pad_top < 0 || pad_bottom < 0 || pad_left < 0 || pad_right < 0) {
    Fail(ErrorKind::kInvalidArgument, "padding must be >= 0");
  }
  // oneDNN and cuDNN take these sizes as int32. Bounding them the same way
  // keeps every kernel's index arithmetic in int64: a stride times an output
  // index or a slack of pixels, the dilated kernel's span, each padded side.
  for (const auto& [what, v] :
       {std::pair<const char*, int64_t>{"kernel height", kernel_h},
        {"kernel width", kernel_w},
        {"stride height", stride_h},
        {"stride width", stride_w},
        {"dilation height", dilation_h},
        {"dilation width", dilation_w},
        {"top padding", pad_top},
        {"bottom padding", pad_bottom},
        {"left padding", pad_left},
        {"right padding", pad_right}}) {
    if (v > kMaxConv2dSize) {
      Fail(ErrorKind::kInvalidArgument, what, " must be at most ",
           kMaxConv2dSize, " (2^31 - 1), got ", v);
    }
  }
  if (in_channels % groups || out_channels % groups) {
    Fail(ErrorKind::kInvalidArgument, "groups=", groups,
         " must divide in_channels=", in_channels,
         " and out_channels=", out_channels);
  }
  const std::string bad_activation = activation.WhyInvalid();
  if (!bad_activation.empty()) {
    Fail(ErrorKind::kInvalidArgument, bad_activation);
  }
  ValidateWeightBias(params, has_bias,
                     {out_channels, in_channels / groups, kernel_h, kernel_w},
                     "(out_channels, in_channels / groups, kernel_h, kernel_w)",
                     dtype);
}

ImageDims CheckImageInput(const Tensor& input, Layout layout, DType dtype,
                          int64_t channels) {
  if (input.rank() != 4) {
    Fail(ErrorKind::kShape, "expected a rank-4 ", Name(layout),
         " input, got rank ", input.rank(), " ", ToString(input.shape));
  }
  ValidateInputDType(input, dtype);
  CheckShape(input.shape, "input");
  const ImageDims dims = ImageDimsOf(input.shape, layout);
  if (dims.c != channels) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") has ", dims.c, " channels, the layer expects ", channels);
  }
  if (dims.h < 1 || dims.w < 1) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape),
         " has an empty spatial dimension");
  }
  return dims;
}

Shape Conv2dAttrs::OutputShape(const Tensor& input) const {
  const ImageDims in = CheckImageInput(input, layout, dtype, in_channels);
  // Validate bounded every size by 2^31, so none of these can wrap.
  const int64_t span_h = dilation_h * (kernel_h - 1) + 1;
  const int64_t span_w = dilation_w * (kernel_w - 1) + 1;
  const int64_t padded_h = in.h + pad_top + pad_bottom;
  const int64_t padded_w = in.w + pad_left + pad_right;
  // Algorithms copy the padded input's planes (smm, kn2row) or index them
  // as if they existed: they must be a tensor the core could address.
  CheckShape({in.c, padded_h, padded_w}, "the padded input");
  if (padded_h < span_h || padded_w < span_w) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " padded to ",
         padded_h, "x", padded_w, " is smaller than the dilated kernel ",
         span_h, "x", span_w);
  }
  ImageDims out{in.n, out_channels, (padded_h - span_h) / stride_h + 1,
                (padded_w - span_w) / stride_w + 1};
  Shape shape = ImageShape(out, layout);
  // Huge paddings give outputs no buffer can hold, even for an empty batch
  // (the kernels' index arithmetic would wrap).
  CheckShape(shape, "output");
  return shape;
}

// Runs on every forward pass, after OutputShape accepted the input, so it
// computes the output size directly instead of building Shapes (which would
// allocate; a Model's forward allocates nothing).
Conv2dGeometry GeometryOf(const Conv2dAttrs& a, const Shape& input_shape) {
  const ImageDims in = ImageDimsOf(input_shape, a.layout);
  const int64_t oh =
      (in.h + a.pad_top + a.pad_bottom - a.dilation_h * (a.kernel_h - 1) - 1) /
          a.stride_h +
      1;
  const int64_t ow =
      (in.w + a.pad_left + a.pad_right - a.dilation_w * (a.kernel_w - 1) - 1) /
          a.stride_w +
      1;
  return {in.n,
          in.c,
          in.h,
          in.w,
          a.out_channels,
          oh,
          ow,
          a.groups,
          in.c / a.groups,
          a.out_channels / a.groups,
          a.kernel_h,
          a.kernel_w,
          a.stride_h,
          a.stride_w,
          a.pad_top,
          a.pad_left,
          a.dilation_h,
          a.dilation_w,
          a.layout};
}

}  // namespace ai3
