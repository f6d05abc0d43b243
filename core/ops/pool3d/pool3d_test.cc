// maxpool3d and avgpool3d against their definitions (PyTorch's output
// sizes, ceil_mode, divisors; max's NaN), summed in double, over a grid of
// kernels, strides, paddings, dilations, ceil_mode, count_include_pad and
// divisor_override, NCDHW and NDHWC, float32 and float64; then the errors
// bad attributes and inputs must raise.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/pool3d/pool3d.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;
using Triple = std::array<int64_t, 3>;

struct Case {
  int64_t n, c;
  Triple size, kernel, stride;
  std::vector<int64_t> padding;
  Triple dilation;
  bool ceil_mode, count_include_pad;
  int64_t divisor_override;
};

// PyTorch's pooling_output_shape for one dim.
int64_t OutSize(int64_t in, int64_t k, int64_t before, int64_t after, int64_t s,
                int64_t d, bool ceil_mode) {
  const int64_t span = in + before + after - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + before) --out;
  return out;
}

Triple OutputSize(const Case& p) {
  Triple o;
  for (int d = 0; d < 3; ++d) {
    o[d] =
        OutSize(p.size[d], p.kernel[d], p.padding[2 * d], p.padding[2 * d + 1],
                p.stride[d], p.dilation[d], p.ceil_mode);
  }
  return o;
}

// NCDHW, double: the max (a NaN wins) or the average, PyTorch's way.
std::vector<double> Reference(const Case& p, bool max,
                              const std::vector<double>& x) {
  const Triple o = OutputSize(p);
  const Triple& s = p.size;
  std::vector<double> y;
  for (int64_t nc = 0; nc < p.n * p.c; ++nc)
    for (int64_t z = 0; z < o[0]; ++z)
      for (int64_t i = 0; i < o[1]; ++i)
        for (int64_t j = 0; j < o[2]; ++j) {
          const Triple out = {z, i, j};
          double acc = max ? -INFINITY : 0.0;
          int64_t padded = 1, inside = 0;
          Triple start;
          for (int d = 0; d < 3; ++d) {
            start[d] = out[d] * p.stride[d] - p.padding[2 * d];
            const int64_t end =
                std::min(start[d] + p.kernel[d], s[d] + p.padding[2 * d + 1]);
            padded *= end - start[d];
          }
          for (int64_t q = 0; q < p.kernel[0]; ++q)
            for (int64_t r = 0; r < p.kernel[1]; ++r)
              for (int64_t t = 0; t < p.kernel[2]; ++t) {
                const int64_t iz = start[0] + q * p.dilation[0];
                const int64_t ii = start[1] + r * p.dilation[1];
                const int64_t ij = start[2] + t * p.dilation[2];
                if (iz < 0 || iz >= s[0] || ii < 0 || ii >= s[1] || ij < 0 ||
                    ij >= s[2]) {
                  continue;
                }
                const double v = x[((nc * s[0] + iz) * s[1] + ii) * s[2] + ij];
                ++inside;
                acc = max ? (v > acc || std::isnan(v) ? v : acc) : acc + v;
              }
          if (!max) {
            acc /= p.divisor_override > 0 ? p.divisor_override
                   : p.count_include_pad  ? padded
                                          : inside;
          }
          y.push_back(acc);
        }
  return y;
}

template <class Attrs>
Attrs AttrsOf(const Case& p, Layout layout) {
  Attrs a;
  a.kernel = {p.kernel.begin(), p.kernel.end()};
  a.stride = {p.stride.begin(), p.stride.end()};
  a.padding = p.padding;
  a.dilation = {p.dilation.begin(), p.dilation.end()};
  a.ceil_mode = p.ceil_mode;
  a.layout = layout;
  return a;
}

Shape VolumeShape(int64_t n, int64_t c, const Triple& s, Layout layout) {
  return layout == Layout::kNHWC ? Shape{n, s[0], s[1], s[2], c}
                                 : Shape{n, c, s[0], s[1], s[2]};
}

template <class Attrs, typename T>
void RunCase(const Case& p, Layout layout, const Attrs& a, bool max) {
  const DType dtype = testing::DTypeOf<T>();
  const int64_t volume = p.size[0] * p.size[1] * p.size[2];
  const Triple o = OutputSize(p);
  auto xd = testing::RandomVector(p.n * p.c * volume, 5);
  if (max) xd[xd.size() / 3] = NAN;  // a NaN wins its windows
  auto want = Reference(p, max, xd);
  if (layout == Layout::kNHWC) {
    xd = testing::ToNhwc(xd, p.n, p.c, volume, 1);
    want = testing::ToNhwc(want, p.n, p.c, o[0] * o[1] * o[2], 1);
  }
  const auto x = testing::Cast<T>(xd);
  Layer<Attrs> layer("pool", a, {}, "direct");
  const Tensor xt{const_cast<T*>(x.data()), dtype,
                  VolumeShape(p.n, p.c, p.size, layout)};
  const Shape out_shape = VolumeShape(p.n, p.c, o, layout);
  const std::string desc = std::string(Attrs::kOp) + " " + Name(dtype) + " " +
                           Name(layout) + " " + ToString(xt.shape) + " -> " +
                           ToString(out_shape);
  Check(layer.OutputShape(xt) == out_shape, desc + ": output shape");
  std::vector<T> y(want.size(), T(-42));
  layer.Forward(xt, Tensor{y.data(), dtype, out_shape});
  bool ok = true;
  for (size_t k = 0; k < y.size(); ++k) {
    const double tol =
        (sizeof(T) == 4 ? 1e-5 : 1e-12) * std::max(1.0, std::abs(want[k]));
    if (std::isnan(want[k]) ? !std::isnan(y[k])
                            : !(std::abs(y[k] - want[k]) <= tol)) {
      ok = false;
    }
  }
  Check(ok, desc);
}

template <typename T>
void RunBoth(T, const Case& p, Layout layout, const std::string&) {
  RunCase<MaxPool3dAttrs, T>(p, layout, AttrsOf<MaxPool3dAttrs>(p, layout),
                             true);
  if (p.dilation != Triple{1, 1, 1}) return;  // average pooling has none
  auto a = AttrsOf<AvgPool3dAttrs>(p, layout);
  a.count_include_pad = p.count_include_pad;
  a.divisor_override = p.divisor_override;
  RunCase<AvgPool3dAttrs, T>(p, layout, a, false);
}

void ErrorCases() {
  std::vector<float> x(64);
  MaxPool3dAttrs a;
  a.kernel = {2, 2, 2};
  a.stride = {2, 2, 2};
  MaxPool3dAttrs bad = a;
  bad.kernel = {2, 2};
  ExpectError("kernel size", ErrorKind::kInvalidArgument,
              "kernel must have 3 values, got 2",
              [&] { Layer<MaxPool3dAttrs>("p", bad, {}, "direct"); });
  bad = a;
  bad.padding = {0, 0, 2, 0, 0, 0};
  ExpectError("padding", ErrorKind::kInvalidArgument,
              "padding should be at most half of kernel size",
              [&] { Layer<MaxPool3dAttrs>("p", bad, {}, "direct"); });
  AvgPool3dAttrs avg;
  avg.kernel = {2, 2, 2};
  avg.dilation = {1, 2, 1};
  ExpectError("avg dilation", ErrorKind::kInvalidArgument,
              "average pooling has no dilation",
              [&] { Layer<AvgPool3dAttrs>("p", avg, {}, "direct"); });
  Layer<MaxPool3dAttrs> layer("p", a, {}, "direct");
  ExpectError("rank", ErrorKind::kShape, "expected a rank-5 NCDHW input", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 4, 4, 4}});
  });
  ExpectError("too small", ErrorKind::kShape, "gives no output in depth", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 2, 1, 4, 4}});
  });
  ExpectError("unknown algorithm", ErrorKind::kUnknownAlgorithm,
              "unknown maxpool3d algorithm 'gemm'",
              [&] { Layer<MaxPool3dAttrs>("p", a, {}, "gemm"); });
}

}  // namespace

int Main() {
  const std::vector<int64_t> none(6, 0), one(6, 1);
  // n, c, size, kernel, stride, padding, dilation, ceil, count_pad, divisor
  const std::vector<Case> cases = {
      {1, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, none, {1, 1, 1}, false, true, 0},
      {2, 3, {4, 6, 6}, {2, 2, 2}, {2, 2, 2}, none, {1, 1, 1}, false, true, 0},
      // S3D's: (1, 3, 3) stride (1, 2, 2) pad (0, 1, 1); (3, 3, 3) stride 1
      {1,
       4,
       {3, 9, 8},
       {1, 3, 3},
       {1, 2, 2},
       {0, 0, 1, 1, 1, 1},
       {1, 1, 1},
       false,
       true,
       0},
      {2, 3, {4, 5, 5}, {3, 3, 3}, {1, 1, 1}, one, {1, 1, 1}, false, false, 0},
      {1,
       2,
       {5, 7, 6},
       {3, 3, 2},
       {2, 2, 2},
       {1, 1, 1, 0, 0, 1},
       {1, 1, 1},
       true,
       true,
       0},
      {1,
       2,
       {5, 7, 6},
       {3, 3, 2},
       {2, 2, 2},
       {1, 1, 1, 0, 0, 1},
       {1, 1, 1},
       true,
       false,
       0},
      {2,
       3,
       {4, 6, 5},
       {2, 3, 2},
       {1, 2, 2},
       {1, 0, 1, 1, 0, 1},
       {1, 1, 1},
       false,
       true,
       5},
      {1,
       3,
       {7, 7, 7},
       {2, 2, 3},
       {2, 1, 2},
       {1, 1, 0, 0, 1, 1},
       {2, 3, 1},
       true,
       true,
       0},
      {2, 16, {4, 8, 8}, {3, 3, 3}, {2, 2, 2}, one, {1, 1, 1}, false, true, 0},
  };
  const int ran =
      testing::RunEachLayout(std::vector<std::string>{"direct"}, cases,
                             [](auto... args) { RunBoth(args...); });
  ErrorCases();
  return testing::Summary("pool3d", ran);
}

}  // namespace ai3
