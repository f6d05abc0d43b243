#include "core/ops/conv_transpose2d/conv_transpose2d.h"

#include "core/errors.h"
#include "core/registry.h"

namespace ai3 {

void ConvTranspose2dAttrs::Validate(const std::vector<Tensor>& params) const {
  // The attributes' own rules are conv2d's (sizes >= 1 and at most
  // 2^31 - 1, pads >= 0, groups dividing both channel counts): conv2d's
  // Validate checks them on the conv2d of these attributes, with a weight
  // of the shape it expects (only shapes are read; no data).
  Conv2dAttrs same;
  same.in_channels = in_channels;
  same.out_channels = out_channels;
  same.kernel_h = kernel_h;
  same.kernel_w = kernel_w;
  same.stride_h = stride_h;
  same.stride_w = stride_w;
  same.pad_top = pad_top;
  same.pad_bottom = pad_bottom;
  same.pad_left = pad_left;
  same.pad_right = pad_right;
  same.dilation_h = dilation_h;
  same.dilation_w = dilation_w;
  same.groups = groups;
  same.dtype = dtype;
  const int64_t per_group = groups >= 1 ? in_channels / groups : 0;
  same.Validate(
      {Tensor{nullptr, dtype, {out_channels, per_group, kernel_h, kernel_w}}});
  // torch takes output_padding < stride or < dilation; ONNX's output_shape
  // may ask for more rows, which no input reaches (zeros, plus the bias).
  if (output_padding_h < 0 || output_padding_w < 0 ||
      output_padding_h > kMaxConv2dSize || output_padding_w > kMaxConv2dSize) {
    Fail(ErrorKind::kInvalidArgument, "output_padding (", output_padding_h,
         ", ", output_padding_w, ") must be in [0, 2^31 - 1]");
  }
  if (params.size() != (has_bias ? 2u : 1u)) {
    Fail(ErrorKind::kInvalidArgument, "expected ", has_bias ? 2 : 1,
         " parameter tensors (weight", has_bias ? ", bias" : "", "), got ",
         params.size());
  }
  // The weight as conv2d's checks it; the bias has out_channels values,
  // not the weight's first dim.
  ValidateWeightBias({params[0]}, false,
                     {in_channels, out_channels / groups, kernel_h, kernel_w},
                     "(in_channels, out_channels / groups, kernel_h, kernel_w)",
                     dtype);
  if (has_bias) {
    if (params[1].shape != Shape{out_channels}) {
      Fail(ErrorKind::kShape, "bias has shape ", ToString(params[1].shape),
           ", expected (", out_channels, ",)");
    }
    if (params[1].dtype != dtype) {
      Fail(ErrorKind::kDType, "weights are ", Name(params[1].dtype),
           ", layer is ", Name(dtype));
    }
  }
}

Shape ConvTranspose2dAttrs::OutputShape(const Tensor& input) const {
  const ImageDims d = CheckImageInput(input, layout, dtype, in_channels);
  // (H - 1)*s + (k - 1)*d + 1 + output_padding - pads, each term bounded
  // (Validate), the product checked.
  auto size = [](int64_t in, int64_t s, int64_t k, int64_t dil, int64_t op,
                 int64_t before, int64_t after, const char* what) {
    const int64_t spread = CheckedMul(in - 1, s, what);
    return CheckedAdd(spread, (k - 1) * dil + 1 + op - before - after, what);
  };
  const int64_t h = size(d.h, stride_h, kernel_h, dilation_h, output_padding_h,
                         pad_top, pad_bottom, "the output height");
  const int64_t w = size(d.w, stride_w, kernel_w, dilation_w, output_padding_w,
                         pad_left, pad_right, "the output width");
  if (h < 1 || w < 1) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") gives an output of ", h, "x", w,
         ": the padding removes every row or column");
  }
  Shape out = ImageShape({d.n, out_channels, h, w}, layout);
  CheckShape(out, "output");
  return out;
}

Conv2dAttrs ConvTranspose2dAttrs::DataGradientOf() const {
  Conv2dAttrs c;
  c.in_channels = out_channels;
  c.out_channels = in_channels;
  c.kernel_h = kernel_h;
  c.kernel_w = kernel_w;
  c.stride_h = stride_h;
  c.stride_w = stride_w;
  c.pad_top = pad_top;
  c.pad_left = pad_left;
  // May be negative: conv2d's geometry then gives exactly this op's input
  // size for its output, and its kernels read only the top/left pads.
  c.pad_bottom = pad_bottom - output_padding_h;
  c.pad_right = pad_right - output_padding_w;
  c.dilation_h = dilation_h;
  c.dilation_w = dilation_w;
  c.groups = groups;
  c.has_bias = false;  // this op adds its own bias (its out_channels)
  c.dtype = dtype;
  c.layout = layout;
  return c;
}

}  // namespace ai3
