#include "core/ops/pool3d/pool3d.h"

#include <string>

#include "core/errors.h"
#include "core/ops/checks.h"
#include "core/ops/pool2d/pool2d.h"  // PoolOutputSize, PoolNoParams

namespace ai3 {
namespace {

const char* const kDims[3] = {"depth", "height", "width"};

}  // namespace

void Pool3dWindow::ValidateWindow() const {
  CheckWindowSizes("kernel", kernel, 3, 1);
  CheckWindowSizes("stride", stride, 3, 1);
  CheckWindowSizes("dilation", dilation, 3, 1);
  CheckWindowSizes("padding", padding, 6, 0);
  for (int d = 0; d < 3; ++d) {
    if (padding[2 * d] > kernel[d] / 2 || padding[2 * d + 1] > kernel[d] / 2) {
      Fail(ErrorKind::kInvalidArgument,
           "padding should be at most half of kernel size, got ",
           padding[2 * d], ", ", padding[2 * d + 1], " in ", kDims[d],
           " for a kernel of ", kernel[d]);
    }
  }
}

Shape Pool3dWindow::WindowOutputShape(const Tensor& input) const {
  if (input.rank() != 5) {
    Fail(ErrorKind::kShape, "expected a rank-5 ",
         layout == Layout::kNHWC ? "NDHWC" : "NCDHW", " input, got rank ",
         input.rank(), " ", ToString(input.shape));
  }
  CheckShape(input.shape, "input");
  const Pool3dGeometry g = Pool3dGeometryOf(*this, input.shape);
  if (g.c < 1 || g.in[0] < 1 || g.in[1] < 1 || g.in[2] < 1) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape),
         " has an empty channel or spatial dimension (only the batch may be "
         "empty)");
  }
  for (int d = 0; d < 3; ++d) {
    if (g.out[d] < 1) {
      Fail(ErrorKind::kShape, "input ", ToString(input.shape),
           " gives no output in ", kDims[d], ": the kernel of ", kernel[d],
           " with dilation ", dilation[d], " does not fit the padded ",
           g.in[d] + padding[2 * d] + padding[2 * d + 1]);
    }
  }
  const bool last = layout == Layout::kNHWC;
  Shape out = last ? Shape{g.n, g.out[0], g.out[1], g.out[2], g.c}
                   : Shape{g.n, g.c, g.out[0], g.out[1], g.out[2]};
  CheckShape(out, "output");
  return out;
}

Pool3dGeometry Pool3dGeometryOf(const Pool3dWindow& w,
                                const Shape& input_shape) {
  const bool last = w.layout == Layout::kNHWC;
  Pool3dGeometry g;
  g.n = input_shape[0];
  g.c = input_shape[last ? 4 : 1];
  for (int d = 0; d < 3; ++d) {
    g.in[d] = input_shape[last ? 1 + d : 2 + d];
    g.kernel[d] = w.kernel[d];
    g.stride[d] = w.stride[d];
    g.pad_before[d] = w.padding[2 * d];
    g.pad_after[d] = w.padding[2 * d + 1];
    g.dilation[d] = w.dilation[d];
    g.out[d] =
        PoolOutputSize(g.in[d], g.kernel[d], g.pad_before[d], g.pad_after[d],
                       g.stride[d], g.dilation[d], w.ceil_mode);
  }
  auto strides = [&](const std::array<int64_t, 3>& size, int64_t* image,
                     int64_t* channel, std::array<int64_t, 3>* step) {
    const int64_t volume = size[0] * size[1] * size[2];
    *image = g.c * volume;
    *channel = last ? 1 : volume;
    const int64_t inner = last ? g.c : 1;
    (*step)[2] = inner;
    (*step)[1] = inner * size[2];
    (*step)[0] = inner * size[2] * size[1];
  };
  strides(g.in, &g.x_image, &g.x_channel, &g.x_step);
  strides(g.out, &g.y_image, &g.y_channel, &g.y_step);
  return g;
}

void MaxPool3dAttrs::Validate(const std::vector<Tensor>& params) const {
  ValidateWindow();
  PoolNoParams(kOp, params);
}

Shape MaxPool3dAttrs::OutputShape(const Tensor& input) const {
  return WindowOutputShape(input);
}

void AvgPool3dAttrs::Validate(const std::vector<Tensor>& params) const {
  ValidateWindow();
  for (int64_t d : dilation) {
    if (d != 1) {
      Fail(ErrorKind::kInvalidArgument,
           "average pooling has no dilation; dilation must be 1, got ", d);
    }
  }
  if (divisor_override < 0) {
    Fail(ErrorKind::kInvalidArgument,
         "divisor_override must be >= 1, or 0 for none; got ",
         divisor_override);
  }
  PoolNoParams(kOp, params);
}

Shape AvgPool3dAttrs::OutputShape(const Tensor& input) const {
  return WindowOutputShape(input);
}

}  // namespace ai3
