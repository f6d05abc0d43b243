// Every registered CPU conv_transpose2d algorithm against the definition
// (a scatter of each input element through the kernel, in double) over a
// grid of stride, padding (asymmetric included), output_padding, dilation,
// groups, bias, kernel and input sizes, NCHW and NHWC, float32 and float64;
// then the errors bad attributes, weights and inputs must raise.
#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/conv_transpose2d/conv_transpose2d.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

struct Case {
  int64_t n, c, h, w, k, kh, kw, sh, sw, pt, pb, pl, pr, oph, opw, dh, dw,
      groups;
  bool bias;
};

int64_t OutSize(int64_t in, int64_t s, int64_t k, int64_t d, int64_t op,
                int64_t before, int64_t after) {
  return (in - 1) * s - before - after + (k - 1) * d + 1 + op;
}

// y (NCHW, double) = the scatter of x through W, plus the bias.
std::vector<double> Reference(const Case& p, const std::vector<double>& x,
                              const std::vector<double>& wt,
                              const std::vector<double>& b) {
  const int64_t oh = OutSize(p.h, p.sh, p.kh, p.dh, p.oph, p.pt, p.pb);
  const int64_t ow = OutSize(p.w, p.sw, p.kw, p.dw, p.opw, p.pl, p.pr);
  const int64_t cg = p.c / p.groups, kg = p.k / p.groups;
  std::vector<double> y(p.n * p.k * oh * ow, 0.0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t ih = 0; ih < p.h; ++ih)
        for (int64_t iw = 0; iw < p.w; ++iw)
          for (int64_t o = 0; o < kg; ++o)
            for (int64_t r = 0; r < p.kh; ++r)
              for (int64_t s = 0; s < p.kw; ++s) {
                const int64_t yh = ih * p.sh - p.pt + r * p.dh;
                const int64_t yw = iw * p.sw - p.pl + s * p.dw;
                if (yh < 0 || yh >= oh || yw < 0 || yw >= ow) continue;
                const int64_t k = c / cg * kg + o;
                y[((n * p.k + k) * oh + yh) * ow + yw] +=
                    x[((n * p.c + c) * p.h + ih) * p.w + iw] *
                    wt[((c * kg + o) * p.kh + r) * p.kw + s];
              }
  if (p.bias) {
    for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
      y[i] += b[i / (oh * ow) % p.k];
    }
  }
  return y;
}

ConvTranspose2dAttrs AttrsOf(const Case& p, DType dtype, Layout layout) {
  ConvTranspose2dAttrs a;
  a.in_channels = p.c;
  a.out_channels = p.k;
  a.kernel_h = p.kh;
  a.kernel_w = p.kw;
  a.stride_h = p.sh;
  a.stride_w = p.sw;
  a.pad_top = p.pt;
  a.pad_bottom = p.pb;
  a.pad_left = p.pl;
  a.pad_right = p.pr;
  a.output_padding_h = p.oph;
  a.output_padding_w = p.opw;
  a.dilation_h = p.dh;
  a.dilation_w = p.dw;
  a.groups = p.groups;
  a.has_bias = p.bias;
  a.dtype = dtype;
  a.layout = layout;
  return a;
}

template <typename T>
void RunCase(T, const Case& p, Layout layout, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  const int64_t kg = p.k / p.groups;
  const auto x0 =
      testing::Cast<T>(testing::RandomVector(p.n * p.c * p.h * p.w, 1));
  const auto w0 =
      testing::Cast<T>(testing::RandomVector(p.c * kg * p.kh * p.kw, 2));
  const auto b0 = testing::Cast<T>(testing::RandomVector(p.k, 3));
  std::vector<double> xd(x0.begin(), x0.end());
  auto want = Reference(p, xd, {w0.begin(), w0.end()}, {b0.begin(), b0.end()});
  const int64_t oh = OutSize(p.h, p.sh, p.kh, p.dh, p.oph, p.pt, p.pb);
  const int64_t ow = OutSize(p.w, p.sw, p.kw, p.dw, p.opw, p.pl, p.pr);
  if (layout == Layout::kNHWC) {
    xd = testing::ToNhwc(xd, p.n, p.c, p.h, p.w);
    want = testing::ToNhwc(want, p.n, p.k, oh, ow);
  }
  auto x = testing::Cast<T>(xd);
  auto wt = w0;
  auto b = b0;
  std::vector<Tensor> params = {
      Tensor{wt.data(), dtype, {p.c, kg, p.kh, p.kw}}};
  if (p.bias) params.push_back(Tensor{b.data(), dtype, {p.k}});
  Layer<ConvTranspose2dAttrs> layer("deconv", AttrsOf(p, dtype, layout), params,
                                    algorithm);
  const Shape in_shape = ImageShape({p.n, p.c, p.h, p.w}, layout);
  const Shape out_shape = ImageShape({p.n, p.k, oh, ow}, layout);
  Tensor xt{x.data(), dtype, in_shape};
  const std::string desc =
      algorithm + " " + Name(dtype) + " " + Name(layout) + " " +
      ToString(in_shape) + " -> " + ToString(out_shape) + " s" +
      std::to_string(p.sh) + " p" + std::to_string(p.pt) + "," +
      std::to_string(p.pb) + " op" + std::to_string(p.oph) + " d" +
      std::to_string(p.dh) + " g" + std::to_string(p.groups);
  Check(layer.OutputShape(xt) == out_shape, desc + ": output shape");
  std::vector<T> y(want.size(), T(-42));
  layer.Forward(xt, Tensor{y.data(), dtype, out_shape});
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-11;
  Check(testing::MaxRelativeError(y, want) < tol, desc);
}

void ErrorCases() {
  std::vector<float> w(2 * 3 * 3 * 3), x(64);
  const Tensor weight{w.data(), DType::kFloat32, {2, 3, 3, 3}};
  ConvTranspose2dAttrs a;
  a.in_channels = 2;
  a.out_channels = 3;
  a.kernel_h = a.kernel_w = 3;
  ConvTranspose2dAttrs bad = a;
  bad.output_padding_h = -1;
  ExpectError("output_padding", ErrorKind::kInvalidArgument,
              "output_padding (-1, 0) must be in [0, 2^31 - 1]", [&] {
                Layer<ConvTranspose2dAttrs>("d", bad, {weight}, "direct");
              });
  bad = a;
  bad.out_channels = 4;
  ExpectError("weight shape", ErrorKind::kShape,
              "(in_channels, out_channels / groups, kernel_h, kernel_w)", [&] {
                Layer<ConvTranspose2dAttrs>("d", bad, {weight}, "direct");
              });
  bad = a;
  bad.groups = 2;
  ExpectError("groups", ErrorKind::kInvalidArgument,
              "groups=2 must divide in_channels=2 and out_channels=3", [&] {
                Layer<ConvTranspose2dAttrs>("d", bad, {weight}, "direct");
              });
  Layer<ConvTranspose2dAttrs> layer("d", a, {weight}, "gemm");
  ExpectError(
      "channels", ErrorKind::kShape,
      "has 3 channels, the layer "
      "expects 2",
      [&] {
        layer.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 3, 2, 2}});
      });
  ExpectError("rank", ErrorKind::kShape, "expected a rank-4 NCHW input", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {2, 8}});
  });
  bad = a;
  bad.pad_top = bad.pad_bottom = 2;
  ExpectError(
      "all cut", ErrorKind::kShape, "the padding removes every row or column",
      [&] {
        Layer<ConvTranspose2dAttrs>("d", bad, {weight}, "direct")
            .OutputShape(Tensor{x.data(), DType::kFloat32, {1, 2, 1, 1}});
      });
  ExpectError("unknown algorithm", ErrorKind::kUnknownAlgorithm,
              "unknown conv_transpose2d algorithm 'smm'",
              [&] { Layer<ConvTranspose2dAttrs>("d", a, {weight}, "smm"); });
}

}  // namespace

int Main() {
  // n, c, h, w, k, kh, kw, sh, sw, pt, pb, pl, pr, oph, opw, dh, dw, groups,
  // bias
  const std::vector<Case> cases = {
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, false},
      {2, 3, 4, 5, 4, 3, 3, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, true},
      {1, 4, 5, 4, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 2, true},
      {2, 2, 3, 3, 3, 4, 4, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1, false},  // DCGAN
      {1, 3, 4, 4, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1, true},   // U-Net
      {1, 2, 5, 6, 4, 3, 2, 3, 2, 2, 0, 0, 1, 2, 1, 1, 1, 2, true},
      {1, 3, 4, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 2, 2, 1, true},   // op<dil
      {2, 4, 3, 5, 4, 3, 3, 2, 1, 0, 3, 2, 0, 0, 0, 2, 1, 4, false},  // dw
      {1, 2, 3, 3, 2, 3, 3, 2, 2, 1, 0, 0, 1, 3, 4, 1, 1, 1, true},   // op>s
      {1, 5, 6, 6, 7, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, true},   // 1x1
      {1, 2, 6, 6, 2, 3, 3, 1, 1, 3, 3, 3, 3, 0, 0, 1, 1, 1,
       false},  // pads>reach
      {2, 16, 14, 14, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},  // big
  };
  const int ran =
      testing::RunEachLayout(testing::CpuAlgorithms<ConvTranspose2dAttrs>(),
                             cases, [](auto... args) { RunCase(args...); });
  ErrorCases();
  return testing::Summary("conv_transpose2d", ran);
}

}  // namespace ai3
