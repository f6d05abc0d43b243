#include "core/ops/conv3d/conv3d.h"

#include <string>

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {
namespace {

const char* const kDims[3] = {"depth", "height", "width"};

}  // namespace

void Conv3dAttrs::Validate(const std::vector<Tensor>& params) const {
  if (in_channels < 1 || out_channels < 1 || groups < 1) {
    Fail(ErrorKind::kInvalidArgument,
         "in_channels, out_channels and groups must be >= 1, got ", in_channels,
         ", ", out_channels, ", ", groups);
  }
  CheckWindowSizes("kernel", {kernel.begin(), kernel.end()}, 3, 1);
  CheckWindowSizes("stride", stride, 3, 1);
  CheckWindowSizes("dilation", dilation, 3, 1);
  CheckWindowSizes("padding", padding, 6, 0);
  if (in_channels % groups || out_channels % groups) {
    Fail(ErrorKind::kInvalidArgument, "groups=", groups,
         " must divide in_channels=", in_channels,
         " and out_channels=", out_channels);
  }
  const std::string bad_activation = activation.WhyInvalid();
  if (!bad_activation.empty()) {
    Fail(ErrorKind::kInvalidArgument, bad_activation);
  }
  ValidateWeightBias(
      params, has_bias,
      {out_channels, in_channels / groups, kernel[0], kernel[1], kernel[2]},
      "(out_channels, in_channels / groups, kernel_d, kernel_h, kernel_w)",
      dtype);
}

Shape Conv3dAttrs::OutputShape(const Tensor& input) const {
  if (input.rank() != 5) {
    Fail(ErrorKind::kShape, "expected a rank-5 ",
         layout == Layout::kNHWC ? "NDHWC" : "NCDHW", " input, got rank ",
         input.rank(), " ", ToString(input.shape));
  }
  ValidateInputDType(input, dtype);
  CheckShape(input.shape, "input");
  const bool last = layout == Layout::kNHWC;
  const int64_t channels = input.shape[last ? 4 : 1];
  if (channels != in_channels) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " has ", channels,
         " channels, the layer expects ", in_channels);
  }
  Shape out(5);
  out[0] = input.shape[0];
  out[last ? 4 : 1] = out_channels;
  for (int d = 0; d < 3; ++d) {
    const int64_t size = input.shape[last ? 1 + d : 2 + d];
    // Validate bounded every size by 2^31, so none of these can wrap.
    const int64_t padded = size + padding[2 * d] + padding[2 * d + 1];
    const int64_t span = dilation[d] * (kernel[d] - 1) + 1;
    if (size < 1) {
      Fail(ErrorKind::kShape, "input ", ToString(input.shape), " has an empty ",
           kDims[d]);
    }
    if (padded < span) {
      Fail(ErrorKind::kShape, "input ", ToString(input.shape), " padded to ",
           padded, " in ", kDims[d], " is smaller than the dilated kernel's ",
           span);
    }
    out[last ? 1 + d : 2 + d] = (padded - span) / stride[d] + 1;
  }
  CheckShape(out, "output");
  return out;
}

Conv3dGeometry GeometryOf(const Conv3dAttrs& a, const Shape& input_shape) {
  const bool last = a.layout == Layout::kNHWC;
  Conv3dGeometry g;
  g.n = input_shape[0];
  g.c = a.in_channels;
  g.k = a.out_channels;
  g.groups = a.groups;
  g.cg = a.in_channels / a.groups;
  g.kg = a.out_channels / a.groups;
  for (int d = 0; d < 3; ++d) {
    g.in[d] = input_shape[last ? 1 + d : 2 + d];
    g.kernel[d] = a.kernel[d];
    g.stride[d] = a.stride[d];
    g.pad[d] = a.padding[2 * d];
    g.dilation[d] = a.dilation[d];
    const int64_t padded = g.in[d] + a.padding[2 * d] + a.padding[2 * d + 1];
    g.out[d] =
        (padded - a.dilation[d] * (a.kernel[d] - 1) - 1) / a.stride[d] + 1;
  }
  // Element strides: channels innermost (NDHWC) or outermost (NCDHW).
  auto strides = [last](int64_t channels, const std::array<int64_t, 3>& size,
                        int64_t* image, int64_t* channel,
                        std::array<int64_t, 3>* step) {
    const int64_t volume = size[0] * size[1] * size[2];
    *image = channels * volume;
    *channel = last ? 1 : volume;
    const int64_t inner = last ? channels : 1;
    (*step)[2] = inner;
    (*step)[1] = inner * size[2];
    (*step)[0] = inner * size[2] * size[1];
  };
  strides(g.c, g.in, &g.x_image, &g.x_channel, &g.x_step);
  strides(g.k, g.out, &g.y_image, &g.y_channel, &g.y_step);
  return g;
}

}  // namespace ai3
