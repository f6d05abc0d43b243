// resize: nearest, bilinear or bicubic resampling of H and W of a rank-4 image
// tensor (torch F.interpolate / nn.Upsample / nn.UpsamplingNearest2d /
// nn.UpsamplingBilinear2d, ONNX Resize and Upsample, Keras UpSampling2D and
// Resizing). The output is `size` (out_h, out_w), or floor(in * scale)
// where only `scale` is given. Each output index x reads input coordinate
//   half_pixel:          (x + 0.5) * r - 0.5
//   half_pixel_symmetric: the same plus (in / 2) (1 - out / (in * scale)),
//                        which centres the output when floor(in * scale)
//                        drops a fraction (0 by sizes: scale = out / in)
//   pytorch_half_pixel:  the same, 0 where the output has one element
//   align_corners:       x * (in - 1) / (out - 1), 0 where out = 1
//   asymmetric:          x * r
// with r = 1 / scale where a scale is given (torch's scale_factor, ONNX's
// scales: the frameworks map coordinates by it, not by the sizes' ratio),
// else in / out. nearest rounds that coordinate (nearest_mode: ONNX's
// round_prefer_floor, round_prefer_ceil, floor, ceil; torch "nearest" is
// asymmetric + floor, "nearest-exact" half_pixel + round_prefer_ceil) and
// clamps it into the input; linear clamps it into [0, in - 1] and
// interpolates between its two neighbours in each dim; cubic weighs the
// four neighbours floor(c) - 1 .. floor(c) + 2 of the unclamped coordinate
// c by Keys' cubic convolution with coefficient A (cubic_a: ONNX's and
// torch's -0.75, TensorFlow's -0.5), reading an index outside the input
// as the nearest edge, or with exclude_outside giving it weight 0 and
// renormalising the others (ONNX's attributes).
#ifndef AI3_CORE_OPS_RESIZE_RESIZE_H_
#define AI3_CORE_OPS_RESIZE_RESIZE_H_

#include <cstdint>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct ResizeAttrs {
  static constexpr char kOp[] = "resize";

  enum class Mode { kNearest, kLinear, kCubic };
  enum class Coordinates {
    kHalfPixel,
    kPytorchHalfPixel,
    kAlignCorners,
    kAsymmetric,
    kHalfPixelSymmetric
  };
  enum class Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

  int64_t out_h = 0, out_w = 0;     // 0: from the scale
  double scale_h = 0, scale_w = 0;  // 0: none given
  Mode mode = Mode::kNearest;
  // ONNX's defaults.
  Coordinates coordinates = Coordinates::kHalfPixel;
  Rounding rounding = Rounding::kRoundPreferFloor;
  double cubic_a = -0.75;        // cubic: Keys' coefficient
  bool exclude_outside = false;  // cubic: outside taps weigh 0
  Layout layout = Layout::kNCHW;

  // No parameter tensors; a size (both > 0) or a scale (both > 0, finite).
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

// resize_backward_data: x's shape, each output's dy spread back over the
// input taps it read, by the weights it read them with (direct.cc).
struct ResizeBackwardDataAttrs : DataGradientAttrs<ResizeAttrs> {
  static constexpr char kOp[] = "resize_backward_data";
};

// Where output index x of `out` reads along a dim of `in`: the two input
// indices and the weight of the second (linear), or the one index
// (nearest, i0 = i1, weight 0). The coordinate is computed in T, the
// tensor's dtype, as torch and ONNX Runtime compute it (in float32 for a
// float32 tensor), so that nearest's ties round as theirs do: with a given
// scale, x + 0.5 (or x) is divided by it, as ONNX Runtime does (torch
// multiplies by 1 / scale: the same for the integer scales it exports);
// with sizes it is multiplied by in / out, as torch does.
struct ResizeTap {
  int64_t i0, i1;
  double weight;
};
template <typename T>
ResizeTap ResizeTapOf(const ResizeAttrs& a, int64_t x, int64_t in, int64_t out,
                      double scale);

// cubic's taps along a dim: four input indices (clamped into the input)
// and their weights.
struct CubicTap {
  int64_t i[4];
  double weight[4];
};
template <typename T>
CubicTap CubicTapOf(const ResizeAttrs& a, int64_t x, int64_t in, int64_t out,
                    double scale);

}  // namespace ai3

#endif  // AI3_CORE_OPS_RESIZE_RESIZE_H_
