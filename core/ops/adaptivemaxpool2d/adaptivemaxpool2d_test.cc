// adaptivemaxpool2d against a naive reference (windows as PyTorch computes
// them) over input/output sizes that divide, don't divide, upsample and
// reduce to 1x1, NCHW and NHWC, both dtypes, NaN propagation; errors.
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/adaptivemaxpool2d/adaptivemaxpool2d.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

template <typename T>
void Case(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow,
          Layout layout, bool nan) {
  const DType dtype = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  auto nchw = testing::RandomVector(n * c * h * w, 6);
  if (nan) nchw[1] = NAN;
  std::vector<double> want(n * c * oh * ow);
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
        const int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
        double m = -INFINITY;
        for (int64_t a = h0; a < h1; ++a)
          for (int64_t b = w0; b < w1; ++b) {
            const double v = nchw[(p * h + a) * w + b];
            m = (v > m || std::isnan(v)) ? v : m;
          }
        want[(p * oh + i) * ow + j] = m;
      }
  const bool nhwc = layout == Layout::kNHWC;
  auto x = testing::Cast<T>(nhwc ? testing::ToNhwc(nchw, n, c, h, w) : nchw);
  if (nhwc) want = testing::ToNhwc(want, n, c, oh, ow);
  AdaptiveMaxPool2dAttrs a;
  a.output_h = oh;
  a.output_w = ow;
  a.layout = layout;
  Layer<AdaptiveMaxPool2dAttrs> layer("p", a, {}, "direct");
  const Shape in_shape = nhwc ? Shape{n, h, w, c} : Shape{n, c, h, w};
  Tensor xt{x.data(), dtype, in_shape, {}, layout};
  const Shape out_shape = layer.OutputShape(xt);
  std::vector<T> y(want.size(), T(-5));
  layer.Forward(xt, Tensor{y.data(), dtype, out_shape, {}, layout});
  bool ok = true;
  for (size_t i = 0; i < y.size(); ++i) {
    ok &= std::isnan(want[i]) ? std::isnan(double(y[i]))
                              : double(y[i]) == double(T(want[i]));
  }
  Check(ok, std::string("adaptivemaxpool2d ") + Name(dtype) + " " +
                Name(layout) + " " + ToString(in_shape) + " -> " +
                std::to_string(oh) + "x" + std::to_string(ow) +
                (nan ? " with NaN" : ""));
}

}  // namespace

int Main() {
  int ran = 0;
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    for (auto [h, w, oh, ow] :
         std::vector<std::array<int64_t, 4>>{{8, 8, 4, 4},
                                             {7, 9, 3, 4},
                                             {5, 5, 1, 1},
                                             {3, 2, 5, 7},
                                             {14, 14, 7, 7},
                                             {1, 1, 2, 2}}) {
      for (int nan = 0; nan < 2; ++nan) {
        Case<float>(2, 3, h, w, oh, ow, layout, nan);
        Case<double>(2, 3, h, w, oh, ow, layout, nan);
        ran += 2;
      }
    }
  }
  AdaptiveMaxPool2dAttrs a;
  a.output_h = 0;
  ExpectError("size", ErrorKind::kInvalidArgument, "output size must be >= 1x1",
              [&] { Layer<AdaptiveMaxPool2dAttrs>("p", a, {}, "direct"); });
  a.output_h = 2;
  Layer<AdaptiveMaxPool2dAttrs> layer("p", a, {}, "direct");
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  ExpectError("rank", ErrorKind::kShape, "adaptivemaxpool2d layer 'p' (direct)",
              [&] { layer.OutputShape(xt); });
  return testing::Summary("adaptivemaxpool2d", ran);
}

}  // namespace ai3
