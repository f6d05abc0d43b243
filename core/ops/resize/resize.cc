#include "core/ops/resize/resize.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace ai3 {

void ResizeAttrs::Validate(const std::vector<Tensor>& params) const {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument, "resize takes no parameter tensors, got ",
         params.size());
  }
  const bool sized = out_h != 0 || out_w != 0;
  const bool scaled = scale_h != 0 || scale_w != 0;
  if (!sized && !scaled) {
    Fail(ErrorKind::kInvalidArgument, "resize needs a size or a scale");
  }
  if (sized && (out_h < 1 || out_w < 1)) {
    Fail(ErrorKind::kInvalidArgument, "size must be >= 1, got (", out_h, ", ",
         out_w, ")");
  }
  if (scaled && !(scale_h > 0 && scale_w > 0 && std::isfinite(scale_h) &&
                  std::isfinite(scale_w))) {
    Fail(ErrorKind::kInvalidArgument, "scale must be finite and > 0, got (",
         scale_h, ", ", scale_w, ")");
  }
  if (!std::isfinite(cubic_a)) {
    Fail(ErrorKind::kInvalidArgument, "cubic_coeff_a must be finite, got ",
         cubic_a);
  }
}

Shape ResizeAttrs::OutputShape(const Tensor& input) const {
  ImageDims d = Rank4InputDims(input, layout);
  if (d.h < 1 || d.w < 1) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") has spatial size ", d.h, "x", d.w, "; both must be >= 1");
  }
  auto scaled = [&](int64_t in, double s, const char* what) {
    const double v = std::floor(double(in) * s);
    if (!(v >= 1) || v > 9.0e15) {
      Fail(ErrorKind::kShape, "input ", ToString(input.shape), " scaled by ", s,
           " gives ", what, " ", v, "; it must be in [1, 2^53]");
    }
    return static_cast<int64_t>(v);
  };
  d.h = out_h ? out_h : scaled(d.h, scale_h, "an output height");
  d.w = out_w ? out_w : scaled(d.w, scale_w, "an output width");
  Shape out = ImageShape(d, layout);
  CheckShape(out, "output");
  return out;
}

namespace {

// Output index x's input coordinate src; for the half-pixel modes also h
// (src + 0.5), from which nearest rounds (ResizeTapOf).
template <typename T>
struct SourceCoordinate {
  T src = 0, h = 0;
  bool half_pixel = false;
};

template <typename T>
SourceCoordinate<T> SourceOf(const ResizeAttrs& a, int64_t x, int64_t in,
                             int64_t out, double scale) {
  using C = ResizeAttrs::Coordinates;
  // x / scale, or x * in / out, in T.
  auto mapped = [&](T v) {
    return scale > 0 ? v / T(scale) : v * (T(in) / T(out));
  };
  // The half-pixel modes' coordinate is h - 0.5 with h = (x + 0.5) * r;
  // nearest rounds from h itself (floor(h) is round-half-up of h - 0.5), so
  // that no - 0.5 + 0.5 round trip moves a tie (torch's nearest-exact is
  // floor(h), its nearest floor(x * r): bit for bit these).
  const bool half_pixel = a.coordinates == C::kHalfPixel ||
                          a.coordinates == C::kHalfPixelSymmetric ||
                          (a.coordinates == C::kPytorchHalfPixel && out > 1);
  T src = 0, h = 0;
  if (half_pixel) {
    h = mapped(T(x) + T(0.5));
    if (a.coordinates == C::kHalfPixelSymmetric && scale > 0) {
      // ONNX: offset = in / 2 (1 - adjustment), adjustment = out / (in s).
      h += T(in) / T(2) * (T(1) - T(out) / (T(in) * T(scale)));
    }
    src = h - T(0.5);
  } else if (a.coordinates == C::kAlignCorners) {
    src = out == 1 ? T(0) : T(x) * (T(in - 1) / T(out - 1));
  } else if (a.coordinates == C::kAsymmetric) {
    src = mapped(T(x));
  }
  return {src, h, half_pixel};
}

}  // namespace

template <typename T>
ResizeTap ResizeTapOf(const ResizeAttrs& a, int64_t x, int64_t in, int64_t out,
                      double scale) {
  const SourceCoordinate<T> s = SourceOf<T>(a, x, in, out, scale);
  const T src = s.src, h = s.h;
  const bool half_pixel = s.half_pixel;
  auto clamp = [&](int64_t i) {
    return std::min(std::max<int64_t>(i, 0), in - 1);
  };
  if (a.mode == ResizeAttrs::Mode::kNearest) {
    using R = ResizeAttrs::Rounding;
    T i;
    switch (a.rounding) {
      case R::kFloor:
        i = std::floor(src);
        break;
      case R::kCeil:
        i = std::ceil(src);
        break;
      case R::kRoundPreferCeil:  // halves up
        i = half_pixel ? std::floor(h) : std::floor(src + T(0.5));
        break;
      default:  // halves down
        i = half_pixel ? std::ceil(h - T(1)) : std::ceil(src - T(0.5));
    }
    // Bounded before the cast: a huge coordinate is no int64.
    const int64_t k = clamp(
        static_cast<int64_t>(std::min(std::max(double(i), -1.0), double(in))));
    return {k, k, 0.0};
  }
  const double c = std::min(std::max(double(src), 0.0), double(in - 1));
  const int64_t i0 = static_cast<int64_t>(std::floor(c));
  return {i0, std::min(i0 + 1, in - 1), c - double(i0)};
}

template <typename T>
CubicTap CubicTapOf(const ResizeAttrs& a, int64_t x, int64_t in, int64_t out,
                    double scale) {
  // The unclamped coordinate, bounded so that its floor is an int64: past
  // two pixels outside, every tap reads the edge anyway.
  const double c =
      std::min(std::max(double(SourceOf<T>(a, x, in, out, scale).src), -3.0),
               double(in) + 2.0);
  const double f = std::floor(c), t = c - f;
  const double A = a.cubic_a;
  // Keys' kernel at distances 1 + t, t, 1 - t, 2 - t.
  auto near = [A](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };
  auto far = [A](double d) {
    return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  };
  CubicTap tap;
  const double w[4] = {far(1 + t), near(t), near(1 - t), far(2 - t)};
  double sum = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t i = static_cast<int64_t>(f) - 1 + k;
    const bool outside = i < 0 || i >= in;
    tap.weight[k] = a.exclude_outside && outside ? 0.0 : w[k];
    tap.i[k] = std::min(std::max<int64_t>(i, 0), in - 1);
    sum += tap.weight[k];
  }
  if (a.exclude_outside && sum != 0) {
    for (double& v : tap.weight) v /= sum;
  }
  return tap;
}

template CubicTap CubicTapOf<float>(const ResizeAttrs&, int64_t, int64_t,
                                    int64_t, double);
template CubicTap CubicTapOf<double>(const ResizeAttrs&, int64_t, int64_t,
                                     int64_t, double);
template ResizeTap ResizeTapOf<float>(const ResizeAttrs&, int64_t, int64_t,
                                      int64_t, double);
template ResizeTap ResizeTapOf<double>(const ResizeAttrs&, int64_t, int64_t,
                                       int64_t, double);

}  // namespace ai3
