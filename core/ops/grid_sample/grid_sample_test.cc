// grid_sample on values worked out by hand: a 2x2 image (1, 2; 3, 4)
// sampled at its corners, centre and outside, in each mode and padding,
// with and without align_corners, both layouts, and a 3-D volume; then the
// errors bad inputs must raise. tests/ops_spatial_test.py checks it
// against torch's F.grid_sample over a grid of every mode, padding,
// align_corners, rank, layout and dtype, and against ONNX Runtime.
#include <cmath>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/grid_sample/grid_sample.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;
using M = GridSampleAttrs::Mode;
using P = GridSampleAttrs::Padding;

// The image (1, 2; 3, 4) sampled at `points` ((x, y) pairs).
template <typename T>
std::vector<T> SampleImage(M mode, P padding, bool align, Layout layout,
                           const std::vector<T>& points) {
  std::vector<T> x = {1, 2, 3, 4}, y(points.size() / 2);
  GridSampleAttrs a;
  a.mode = mode;
  a.padding = padding;
  a.align_corners = align;
  a.layout = layout;
  const int64_t n = static_cast<int64_t>(y.size());
  const DType dtype = testing::DTypeOf<T>();
  const bool last = layout == Layout::kNHWC;
  const Shape x_shape = last ? Shape{1, 2, 2, 1} : Shape{1, 1, 2, 2};
  const Shape y_shape = last ? Shape{1, 1, n, 1} : Shape{1, 1, 1, n};
  MultiLayer<GridSampleAttrs>("warp", a, {}, "direct")
      .Forward({Tensor{x.data(), dtype, x_shape},
                Tensor{const_cast<T*>(points.data()), dtype, {1, 1, n, 2}}},
               Tensor{y.data(), dtype, y_shape});
  return y;
}

struct HandCase {
  M mode;
  P padding;
  bool align;
  std::vector<double> want;  // torch's F.grid_sample, to the last bit
  const char* what;
};

template <typename T>
int HandCases(T) {
  // The corners (-1, -1) and (1, 1), the centre, a point outside (2, 0)
  // and one inside (0.25, -0.75).
  const std::vector<T> points = {-1, -1, 1, 1, 0, 0, 2, 0, 0.25, -0.75};
  const std::vector<HandCase> cases = {
      // align_corners: -1 / 1 are the corner pixels' centres; x = 2 is
      // 1.5 pixels in, half its taps outside (zeros).
      {M::kBilinear, P::kZeros, true, {1, 4, 2.5, 1.5, 1.875}, "bilinear"},
      // without: their outer edges, the corners a quarter inside
      {M::kBilinear, P::kZeros, false, {0.25, 1, 2.5, 0, 1.3125}, "bilinear"},
      {M::kBilinear, P::kBorder, false, {1, 4, 2.5, 3, 1.75}, "border"},
      {M::kBilinear,
       P::kReflection,
       false,
       {1, 4, 2.5, 2.5, 1.75},
       "reflection"},
      // the centre is 0.5 pixels in: nearbyint rounds the tie to 0
      {M::kNearest, P::kBorder, true, {1, 4, 1, 2, 2}, "nearest"},
      {M::kNearest, P::kZeros, false, {1, 0, 1, 0, 2}, "nearest"},
      {M::kBicubic,
       P::kBorder,
       true,
       {1, 4, 2.5, 3.09375, 1.8486328125},
       "bicubic"},
  };
  int ran = 0;
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    for (const HandCase& c : cases) {
      const std::vector<T> got =
          SampleImage(c.mode, c.padding, c.align, layout, points);
      Check(testing::MaxRelativeError(got, c.want) < 1e-6,
            std::string(Name(testing::DTypeOf<T>())) + " " + Name(layout) +
                " " + c.what + (c.align ? ", align_corners" : ""));
      ++ran;
    }
  }
  return ran;
}

void ErrorCases() {
  std::vector<float> x(24), g(24);
  GridSampleAttrs a;
  MultiLayer<GridSampleAttrs> layer("warp", a, {}, "direct");
  ExpectError("rank", ErrorKind::kShape, "expected a rank-4 or rank-5 input",
              [&] {
                layer.OutputShape({Tensor{x.data(), DType::kFloat32, {2, 12}},
                                   Tensor{g.data(), DType::kFloat32, {2, 12}}});
              });
  ExpectError(
      "grid shape", ErrorKind::kShape,
      "the grid (1, 2, 3, 3) must be (N, out spatial..., 2)", [&] {
        layer.OutputShape({Tensor{x.data(), DType::kFloat32, {1, 2, 3, 4}},
                           Tensor{g.data(), DType::kFloat32, {1, 2, 3, 3}}});
      });
  std::vector<double> gd(24);
  ExpectError(
      "grid dtype", ErrorKind::kDType,
      "input 1 is float64 but input 0 is float32", [&] {
        layer.OutputShape({Tensor{x.data(), DType::kFloat32, {1, 2, 3, 4}},
                           Tensor{gd.data(), DType::kFloat64, {1, 2, 6, 2}}});
      });
  GridSampleAttrs cubic;
  cubic.mode = M::kBicubic;
  ExpectError(
      "bicubic volume", ErrorKind::kInvalidArgument,
      "bicubic sampling takes a rank-4 input", [&] {
        MultiLayer<GridSampleAttrs>("warp", cubic, {}, "direct")
            .OutputShape({Tensor{x.data(), DType::kFloat32, {1, 1, 2, 3, 4}},
                          Tensor{g.data(), DType::kFloat32, {1, 2, 2, 2, 3}}});
      });
}

}  // namespace

int Main() {
  const int ran = HandCases(0.0f) + HandCases(0.0);
  ErrorCases();
  return testing::Summary("grid_sample", ran);
}

}  // namespace ai3
