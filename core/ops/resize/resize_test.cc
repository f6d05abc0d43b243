// Every registered CPU resize algorithm against the definition (a naive
// per-element loop in double, written from the formulas in resize.h) over
// nearest (each rounding), linear and cubic (A = -0.75 and -0.5, with and
// without exclude_outside), each coordinate mode, up- and
// down-sampling by size and by scale (fractional included), NCHW and NHWC,
// float32 and float64; a few values worked out by hand; then the errors bad
// attributes and inputs must raise. tests/ops_spatial_test.py checks the
// frameworks' own results (torch, ONNX Runtime).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/resize/resize.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;
using M = ResizeAttrs::Mode;
using C = ResizeAttrs::Coordinates;
using R = ResizeAttrs::Rounding;

struct Case {
  int64_t n, c, h, w, oh, ow;  // oh/ow 0: by scale
  double sh, sw;
  M mode;
  C coordinates;
  R rounding;
  double cubic_a = -0.75;
  bool exclude_outside = false;
};

// Keys' cubic convolution kernel with coefficient a at distance d.
double Keys(double a, double d) {
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// The coordinate in T (as the frameworks compute it): v / scale, or
// v * (in / out).
template <typename T>
T Mapped(T v, int64_t in, int64_t out, double s) {
  return s > 0 ? v / T(s) : v * (T(in) / T(out));
}

// half_pixel_symmetric's (x + 0.5) * r shifted by ONNX's offset,
// (in / 2) (1 - out / (in * s)), where a scale is given.
template <typename T>
T Symmetric(int64_t x, int64_t in, int64_t out, double s) {
  const T h = Mapped(T(x) + T(0.5), in, out, s);
  return s > 0 ? h + T(in) / T(2) * (T(1) - T(out) / (T(in) * T(s))) : h;
}

template <typename T>
T Source(const Case& p, int64_t x, int64_t in, int64_t out, double s) {
  switch (p.coordinates) {
    case C::kAlignCorners:
      return out == 1 ? T(0) : T(x) * (T(in - 1) / T(out - 1));
    case C::kPytorchHalfPixel:
      return out == 1 ? T(0) : Mapped(T(x) + T(0.5), in, out, s) - T(0.5);
    case C::kHalfPixel:
      return Mapped(T(x) + T(0.5), in, out, s) - T(0.5);
    case C::kHalfPixelSymmetric:
      return Symmetric<T>(x, in, out, s) - T(0.5);
    default:
      return Mapped(T(x), in, out, s);
  }
}

template <typename T>
double Sample(const Case& p, const std::vector<double>& x, int64_t plane,
              int64_t oy, int64_t ox, int64_t oh, int64_t ow) {
  double sy = Source<T>(p, oy, p.h, oh, p.sh);
  double sx = Source<T>(p, ox, p.w, ow, p.sw);
  auto at = [&](int64_t i, int64_t j) {
    return x[(plane * p.h + i) * p.w + j];
  };
  if (p.mode == M::kCubic) {
    // Taps floor(s) - 1 .. floor(s) + 2 of the unclamped coordinate, each
    // weighed by Keys' kernel at its distance; outside the input the edge,
    // or (exclude_outside) weight 0 and the rest renormalised.
    auto taps = [&](double s, int64_t in, int64_t* index, double* weight) {
      const double f = std::floor(s);
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        const int64_t i = int64_t(f) - 1 + k;
        const bool outside = i < 0 || i >= in;
        weight[k] = p.exclude_outside && outside ? 0 : Keys(p.cubic_a, s - i);
        index[k] = std::min<int64_t>(std::max<int64_t>(i, 0), in - 1);
        sum += weight[k];
      }
      if (p.exclude_outside) {
        for (int k = 0; k < 4; ++k) weight[k] /= sum;
      }
    };
    int64_t iy[4], ix[4];
    double wy[4], wx[4];
    taps(sy, p.h, iy, wy);
    taps(sx, p.w, ix, wx);
    double v = 0;
    for (int q = 0; q < 4; ++q)
      for (int s = 0; s < 4; ++s) v += wy[q] * wx[s] * at(iy[q], ix[s]);
    return v;
  }
  if (p.mode == M::kNearest) {
    // Halves up / down: of the half-pixel coordinate c = h - 0.5 from
    // h = (x + 0.5) * r, floor(h) / ceil(h - 1) (no rounding trip through
    // c); else floor(c + 0.5) / ceil(c - 0.5).
    auto round = [&](double v, int64_t o, int64_t in, int64_t out, double s) {
      const bool hp = p.coordinates == C::kHalfPixel ||
                      p.coordinates == C::kHalfPixelSymmetric ||
                      (p.coordinates == C::kPytorchHalfPixel && out > 1);
      const double h = p.coordinates == C::kHalfPixelSymmetric
                           ? Symmetric<T>(o, in, out, s)
                           : Mapped(T(o) + T(0.5), in, out, s);
      double i = p.rounding == R::kFloor  ? std::floor(v)
                 : p.rounding == R::kCeil ? std::ceil(v)
                 : p.rounding == R::kRoundPreferCeil
                     ? (hp ? std::floor(h) : std::floor(v + 0.5))
                     : (hp ? std::ceil(h - 1) : std::ceil(v - 0.5));
      return std::min<int64_t>(std::max<int64_t>(int64_t(i), 0), in - 1);
    };
    return at(round(sy, oy, p.h, oh, p.sh), round(sx, ox, p.w, ow, p.sw));
  }
  sy = std::min(std::max(sy, 0.0), double(p.h - 1));
  sx = std::min(std::max(sx, 0.0), double(p.w - 1));
  const int64_t y0 = int64_t(sy), x0 = int64_t(sx);
  const int64_t y1 = std::min(y0 + 1, p.h - 1), x1 = std::min(x0 + 1, p.w - 1);
  const double ly = sy - y0, lx = sx - x0;
  return (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x1)) +
         ly * ((1 - lx) * at(y1, x0) + lx * at(y1, x1));
}

template <typename T>
void RunCase(T, const Case& p, Layout layout, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  const int64_t oh = p.oh ? p.oh : int64_t(std::floor(p.h * p.sh));
  const int64_t ow = p.ow ? p.ow : int64_t(std::floor(p.w * p.sw));
  const auto xt =
      testing::Cast<T>(testing::RandomVector(p.n * p.c * p.h * p.w, 11));
  std::vector<double> xd(xt.begin(), xt.end()), want(p.n * p.c * oh * ow);
  for (int64_t plane = 0; plane < p.n * p.c; ++plane)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        want[(plane * oh + i) * ow + j] = Sample<T>(p, xd, plane, i, j, oh, ow);
  if (layout == Layout::kNHWC) {
    xd = testing::ToNhwc(xd, p.n, p.c, p.h, p.w);
    want = testing::ToNhwc(want, p.n, p.c, oh, ow);
  }
  auto x = testing::Cast<T>(xd);
  ResizeAttrs a;
  a.out_h = p.oh;
  a.out_w = p.ow;
  a.scale_h = p.sh;
  a.scale_w = p.sw;
  a.mode = p.mode;
  a.coordinates = p.coordinates;
  a.rounding = p.rounding;
  a.cubic_a = p.cubic_a;
  a.exclude_outside = p.exclude_outside;
  a.layout = layout;
  Layer<ResizeAttrs> layer("up", a, {}, algorithm);
  const Shape in_shape = ImageShape({p.n, p.c, p.h, p.w}, layout);
  const Shape out_shape = ImageShape({p.n, p.c, oh, ow}, layout);
  Tensor in{x.data(), dtype, in_shape};
  const std::string desc =
      algorithm + " " + Name(dtype) + " " + Name(layout) + " " +
      ToString(in_shape) + " -> " + ToString(out_shape) + " mode " +
      std::to_string(int(p.mode)) + " coord " +
      std::to_string(int(p.coordinates)) + " round " +
      std::to_string(int(p.rounding)) + " A " + std::to_string(p.cubic_a) +
      (p.exclude_outside ? " exclude_outside" : "");
  Check(layer.OutputShape(in) == out_shape, desc + ": output shape");
  std::vector<T> y(want.size(), T(-42));
  layer.Forward(in, Tensor{y.data(), dtype, out_shape});
  Check(testing::MaxRelativeError(y, want) < (sizeof(T) == 4 ? 1e-5 : 1e-12),
        desc);
}

// [[1, 2], [3, 4]] doubled: nearest repeats, bilinear (half pixel) blends.
void HandCases() {
  std::vector<float> x = {1, 2, 3, 4}, y(16);
  ResizeAttrs a;
  a.scale_h = a.scale_w = 2;
  a.coordinates = C::kAsymmetric;
  a.rounding = R::kFloor;
  Layer<ResizeAttrs>("up", a, {}, "direct")
      .Forward(Tensor{x.data(), DType::kFloat32, {1, 1, 2, 2}},
               Tensor{y.data(), DType::kFloat32, {1, 1, 4, 4}});
  Check(y == std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4},
        "nearest x2 by hand");
  a.mode = M::kLinear;
  a.coordinates = C::kHalfPixel;
  Layer<ResizeAttrs>("up", a, {}, "direct")
      .Forward(Tensor{x.data(), DType::kFloat32, {1, 1, 2, 2}},
               Tensor{y.data(), DType::kFloat32, {1, 1, 4, 4}});
  Check(y[0] == 1 && y[1] == 1.25f && y[5] == 1.75f && y[15] == 4,
        "bilinear x2 by hand");
}

void ErrorCases() {
  ResizeAttrs a;
  ExpectError("nothing", ErrorKind::kInvalidArgument,
              "resize needs a size or a scale",
              [&] { Layer<ResizeAttrs>("up", a, {}, "direct"); });
  a.scale_h = -1;
  a.scale_w = 2;
  ExpectError("scale", ErrorKind::kInvalidArgument,
              "scale must be finite and > 0",
              [&] { Layer<ResizeAttrs>("up", a, {}, "direct"); });
  a.scale_h = 0.1;
  std::vector<float> x(16);
  Layer<ResizeAttrs> layer("up", a, {}, "direct");
  ExpectError(
      "empty output", ErrorKind::kShape, "it must be in [1, 2^53]", [&] {
        layer.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 1, 4, 4}});
      });
  ExpectError("rank", ErrorKind::kShape, "expected a rank-4 NCHW input", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {4, 4}});
  });
  ResizeAttrs huge;
  huge.scale_h = huge.scale_w = 1e300;
  ExpectError("huge scale", ErrorKind::kShape, "it must be in [1, 2^53]", [&] {
    Layer<ResizeAttrs>("up", huge, {}, "direct")
        .OutputShape(Tensor{x.data(), DType::kFloat32, {1, 1, 4, 4}});
  });
}

}  // namespace

int Main() {
  std::vector<Case> cases;
  const std::vector<Case> shapes = {
      {1, 1, 1, 1, 3, 2, 0, 0},      {2, 3, 4, 5, 8, 10, 0, 0},
      {1, 2, 7, 6, 3, 4, 0, 0},      {1, 2, 5, 5, 0, 0, 2.0, 3.0},
      {2, 1, 5, 7, 0, 0, 1.5, 0.75}, {1, 3, 6, 4, 1, 1, 0, 0},
      {2, 16, 32, 32, 64, 64, 0, 0},  // threaded
  };
  for (Case s : shapes) {
    for (C coord : {C::kHalfPixel, C::kPytorchHalfPixel, C::kAlignCorners,
                    C::kAsymmetric, C::kHalfPixelSymmetric}) {
      s.coordinates = coord;
      s.mode = M::kLinear;
      s.rounding = R::kFloor;
      cases.push_back(s);
      s.mode = M::kCubic;
      for (const auto& [a, exclude] :
           {std::pair{-0.75, false}, {-0.5, false}, {-0.75, true}}) {
        s.cubic_a = a;
        s.exclude_outside = exclude;
        cases.push_back(s);
      }
      s.cubic_a = -0.75;
      s.exclude_outside = false;
      s.mode = M::kNearest;
      for (R r :
           {R::kRoundPreferFloor, R::kRoundPreferCeil, R::kFloor, R::kCeil}) {
        s.rounding = r;
        cases.push_back(s);
      }
    }
  }
  const int ran =
      testing::RunEachLayout(testing::CpuAlgorithms<ResizeAttrs>(), cases,
                             [](auto... args) { RunCase(args...); });
  HandCases();
  ErrorCases();
  return testing::Summary("resize", ran);
}

}  // namespace ai3
