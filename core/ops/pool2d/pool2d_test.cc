// Every registered CPU maxpool2d, avgpool2d and adaptiveavgpool2d algorithm
// against naive references over grids of parameters, in float32 and float64,
// NCHW and NHWC; hand-computed PyTorch results anchor the references; then
// the errors bad attributes and inputs must raise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::DTypeOf;
using testing::ExpectError;
using testing::ToNhwc;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Window {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw;
  bool ceil;
};

// ---- References: NCHW, in double, written from PyTorch's definitions. ----

int64_t RefOutSize(int64_t in, int64_t k, int64_t before, int64_t after,
                   int64_t s, int64_t d, bool ceil_mode) {
  double v = double(in + before + after - d * (k - 1) - 1) / double(s);
  int64_t out = int64_t(ceil_mode ? std::ceil(v) : std::floor(v)) + 1;
  if (ceil_mode && (out - 1) * s >= in + before) --out;
  return out;
}

std::vector<double> RefMaxPool(const Window& p, const std::vector<double>& x,
                               int64_t oh, int64_t ow) {
  std::vector<double> y(p.n * p.c * oh * ow);
  for (int64_t nc = 0; nc < p.n * p.c; ++nc)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double m = -kInf;
        for (int64_t r = 0; r < p.kh; ++r)
          for (int64_t s = 0; s < p.kw; ++s) {
            int64_t ih = i * p.sh - p.pt + r * p.dh;
            int64_t iw = j * p.sw - p.pl + s * p.dw;
            if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
            double v = x[(nc * p.h + ih) * p.w + iw];
            if (std::isnan(v) || v > m) m = v;
          }
        y[(nc * oh + i) * ow + j] = m;
      }
  return y;
}

std::vector<double> RefAvgPool(const Window& p, bool count_include_pad,
                               int64_t divisor_override,
                               const std::vector<double>& x, int64_t oh,
                               int64_t ow) {
  std::vector<double> y(p.n * p.c * oh * ow);
  for (int64_t nc = 0; nc < p.n * p.c; ++nc)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        int64_t h0 = i * p.sh - p.pt, w0 = j * p.sw - p.pl;
        int64_t h1 = std::min(h0 + p.kh, p.h + p.pb);
        int64_t w1 = std::min(w0 + p.kw, p.w + p.pr);
        int64_t pool_size = (h1 - h0) * (w1 - w0);
        h0 = std::max<int64_t>(h0, 0);
        w0 = std::max<int64_t>(w0, 0);
        h1 = std::min(h1, p.h);
        w1 = std::min(w1, p.w);
        double sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw)
            sum += x[(nc * p.h + ih) * p.w + iw];
        int64_t divisor = divisor_override    ? divisor_override
                          : count_include_pad ? pool_size
                                              : (h1 - h0) * (w1 - w0);
        y[(nc * oh + i) * ow + j] = sum / divisor;
      }
  return y;
}

std::vector<double> RefAdaptiveAvgPool(int64_t nc_count, int64_t h, int64_t w,
                                       int64_t oh, int64_t ow,
                                       const std::vector<double>& x) {
  std::vector<double> y(nc_count * oh * ow);
  for (int64_t nc = 0; nc < nc_count; ++nc)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        int64_t h0 = int64_t(std::floor(double(i * h) / oh));
        int64_t h1 = int64_t(std::ceil(double((i + 1) * h) / oh));
        int64_t w0 = int64_t(std::floor(double(j * w) / ow));
        int64_t w1 = int64_t(std::ceil(double((j + 1) * w) / ow));
        double sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += x[(nc * h + ih) * w + iw];
        y[(nc * oh + i) * ow + j] = sum / double((h1 - h0) * (w1 - w0));
      }
  return y;
}

// Largest relative error, where NaN must meet NaN and +-inf the same inf.
template <typename T>
double MaxError(const std::vector<T>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return kInf;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    if (std::isnan(w) || std::isinf(w)) {
      if (!(std::isnan(w) ? std::isnan(g) : g == w)) return kInf;
      continue;
    }
    double e = std::fabs(g - w) / (1.0 + std::fabs(w));
    if (!(e <= worst)) worst = std::isnan(e) ? kInf : e;
  }
  return worst;
}

// Runs a layer on x (NCHW data, converted to `layout`) and compares with
// `want` (NCHW). Returns the error.
template <typename T, class Attrs>
double RunLayer(const Attrs& attrs, const std::string& algorithm, ImageDims in,
                ImageDims out, std::vector<double> xd, std::vector<double> want,
                Layout layout) {
  if (layout == Layout::kNHWC) {
    xd = ToNhwc(xd, in.n, in.c, in.h, in.w);
    want = ToNhwc(want, out.n, out.c, out.h, out.w);
  }
  auto x = testing::Cast<T>(xd);
  std::vector<T> y(want.size(), T(-42));
  Layer<Attrs> layer("test", attrs, {}, algorithm);
  Tensor xt{x.data(), DTypeOf<T>(), ImageShape(in, layout), {}, layout};
  Tensor yt{y.data(), DTypeOf<T>(), ImageShape(out, layout), {}, layout};
  if (layer.OutputShape(xt) != yt.shape) return kInf;
  layer.Forward(xt, yt);
  layer.Forward(xt, yt);  // a second call must give the same answer
  return MaxError(y, want);
}

void SetWindow(const Window& p, Layout layout, Pool2dWindow* a) {
  a->kernel_h = p.kh;
  a->kernel_w = p.kw;
  a->stride_h = p.sh;
  a->stride_w = p.sw;
  a->pad_top = p.pt;
  a->pad_bottom = p.pb;
  a->pad_left = p.pl;
  a->pad_right = p.pr;
  a->dilation_h = p.dh;
  a->dilation_w = p.dw;
  a->ceil_mode = p.ceil;
  a->layout = layout;
}

std::string Describe(const std::string& op, const std::string& algorithm,
                     DType dtype, Layout layout, const Window& p) {
  char desc[256];
  std::snprintf(desc, sizeof desc,
                "%s %s %s %s n%ld c%ld %ldx%ld kernel %ldx%ld stride %ld,%ld "
                "pad %ld,%ld,%ld,%ld dil %ld,%ld ceil %d",
                op.c_str(), algorithm.c_str(), Name(dtype), Name(layout), p.n,
                p.c, p.h, p.w, p.kh, p.kw, p.sh, p.sw, p.pt, p.pb, p.pl, p.pr,
                p.dh, p.dw, p.ceil);
  return desc;
}

double Tolerance(DType dtype) {
  return dtype == DType::kFloat64 ? 1e-12 : 1e-5;
}

template <typename T>
void MaxPoolCase(const Window& p, Layout layout, const std::string& algorithm,
                 bool with_nan) {
  MaxPool2dAttrs a;
  SetWindow(p, layout, &a);
  int64_t oh = RefOutSize(p.h, p.kh, p.pt, p.pb, p.sh, p.dh, p.ceil);
  int64_t ow = RefOutSize(p.w, p.kw, p.pl, p.pr, p.sw, p.dw, p.ceil);
  auto x = testing::RandomVector(p.n * p.c * p.h * p.w, 11);
  if (with_nan) {
    for (size_t i = 0; i < x.size(); i += 7) x[i] = kNaN;
  }
  auto want = RefMaxPool(p, x, oh, ow);
  double err = RunLayer<T>(a, algorithm, {p.n, p.c, p.h, p.w},
                           {p.n, p.c, oh, ow}, x, want, layout);
  Check(err <= Tolerance(DTypeOf<T>()),
        Describe("maxpool2d", algorithm, DTypeOf<T>(), layout, p) +
            (with_nan ? " with NaN" : "") + ": err " + std::to_string(err));
}

template <typename T>
void AvgPoolCase(const Window& p, bool count_include_pad,
                 int64_t divisor_override, Layout layout,
                 const std::string& algorithm) {
  AvgPool2dAttrs a;
  SetWindow(p, layout, &a);
  a.count_include_pad = count_include_pad;
  a.divisor_override = divisor_override;
  int64_t oh = RefOutSize(p.h, p.kh, p.pt, p.pb, p.sh, 1, p.ceil);
  int64_t ow = RefOutSize(p.w, p.kw, p.pl, p.pr, p.sw, 1, p.ceil);
  auto x = testing::RandomVector(p.n * p.c * p.h * p.w, 12);
  auto want = RefAvgPool(p, count_include_pad, divisor_override, x, oh, ow);
  double err = RunLayer<T>(a, algorithm, {p.n, p.c, p.h, p.w},
                           {p.n, p.c, oh, ow}, x, want, layout);
  Check(err <= Tolerance(DTypeOf<T>()),
        Describe("avgpool2d", algorithm, DTypeOf<T>(), layout, p) +
            " count_include_pad " + std::to_string(count_include_pad) +
            " divisor_override " + std::to_string(divisor_override) + ": err " +
            std::to_string(err));
}

template <typename T>
void AdaptiveCase(const ImageDims& in, int64_t oh, int64_t ow, Layout layout,
                  const std::string& algorithm) {
  AdaptiveAvgPool2dAttrs a;
  a.output_h = oh;
  a.output_w = ow;
  a.layout = layout;
  auto x = testing::RandomVector(in.n * in.c * in.h * in.w, 13);
  auto want = RefAdaptiveAvgPool(in.n * in.c, in.h, in.w, oh, ow, x);
  double err =
      RunLayer<T>(a, algorithm, in, {in.n, in.c, oh, ow}, x, want, layout);
  char desc[160];
  std::snprintf(desc, sizeof desc,
                "adaptiveavgpool2d %s %s %s (%ld, %ld, %ld, %ld) -> %ldx%ld: "
                "err %g",
                algorithm.c_str(), Name(DTypeOf<T>()), Name(layout), in.n, in.c,
                in.h, in.w, oh, ow, err);
  Check(err <= Tolerance(DTypeOf<T>()), desc);
}

// ---- Hand-computed PyTorch results. ----

std::vector<double> Arange(int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = double(i);
  return v;
}

void KnownValues() {
  // Output sizes (torch.nn.functional on a 1x1xHxW input).
  Check(PoolOutputSize(4, 3, 1, 1, 2, 1, true) == 3, "size 4 k3 p1 s2 ceil");
  Check(PoolOutputSize(4, 3, 1, 1, 2, 1, false) == 2, "size 4 k3 p1 s2");
  Check(PoolOutputSize(5, 2, 1, 1, 3, 1, true) == 2,
        "size 5 k2 p1 s3 ceil: the last window would start in the padding");
  Check(PoolOutputSize(6, 3, 0, 0, 2, 1, true) == 3, "size 6 k3 s2 ceil");
  Check(PoolOutputSize(6, 3, 0, 0, 2, 1, false) == 2, "size 6 k3 s2");
  Check(PoolOutputSize(1, 1, 0, 0, 2, 1, true) == 1, "size 1 k1 s2 ceil");
  Check(PoolOutputSize(10, 3, 1, 1, 1, 2, false) == 8, "size 10 k3 p1 d2");
  Check(PoolOutputSize(2, 3, 0, 0, 1, 1, false) == 0, "size 2 k3: none");

  // F.avg_pool2d(torch.arange(16.).view(1, 1, 4, 4), 3, 2, 1, ceil_mode=True)
  const Window w{1, 1, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true};
  const std::vector<double> include_pad = {
      10 / 9.0, 24 / 9.0, 10 / 6.0, 51 / 9.0, 10.0, 5.5, 25 / 6.0, 7.0, 3.75};
  const std::vector<double> exclude_pad = {2.5, 4.0,  5.0,  8.5, 10.0,
                                           11,  12.5, 14.0, 15.0};
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    for (bool cip : {true, false}) {
      AvgPool2dAttrs a;
      SetWindow(w, layout, &a);
      a.count_include_pad = cip;
      double err =
          RunLayer<double>(a, "default", {1, 1, 4, 4}, {1, 1, 3, 3}, Arange(16),
                           cip ? include_pad : exclude_pad, layout);
      Check(err <= 1e-12, std::string("known avgpool2d ceil_mode values, ") +
                              "count_include_pad " + std::to_string(cip));
    }
  }
  // F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, divisor_override=2)
  {
    AvgPool2dAttrs a;
    SetWindow(w, Layout::kNCHW, &a);
    a.divisor_override = 2;
    double err = RunLayer<double>(
        a, "default", {1, 1, 4, 4}, {1, 1, 3, 3}, Arange(16),
        {5, 12, 5, 25.5, 45, 16.5, 12.5, 21, 7.5}, Layout::kNCHW);
    Check(err <= 1e-12, "known avgpool2d divisor_override values");
  }
  // F.max_pool2d(torch.arange(25.).view(1, 1, 5, 5), 2, 3, 1, ceil_mode=True)
  {
    MaxPool2dAttrs a;
    SetWindow({1, 1, 5, 5, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, true}, Layout::kNCHW,
              &a);
    double err = RunLayer<float>(a, "default", {1, 1, 5, 5}, {1, 1, 2, 2},
                                 Arange(25), {0, 3, 15, 18}, Layout::kNCHW);
    Check(err <= 1e-6, "known maxpool2d ceil_mode values");
  }
  // F.adaptive_avg_pool2d(torch.arange(10.).view(1, 1, 2, 5), (1, 3)):
  // columns [0, 2), [1, 4), [3, 5).
  {
    AdaptiveAvgPool2dAttrs a;
    a.output_h = 1;
    a.output_w = 3;
    double err =
        RunLayer<double>(a, "default", {1, 1, 2, 5}, {1, 1, 1, 3}, Arange(10),
                         {(0 + 1 + 5 + 6) / 4.0, (1 + 2 + 3 + 6 + 7 + 8) / 6.0,
                          (3 + 4 + 8 + 9) / 4.0},
                         Layout::kNCHW);
    Check(err <= 1e-12, "known adaptiveavgpool2d values");
  }
}

// ---- Errors. ----

void ErrorCases() {
  std::vector<float> x(64), y(64);
  auto make_max = [](auto edit) {
    MaxPool2dAttrs a;
    a.kernel_h = a.kernel_w = 3;
    a.stride_h = a.stride_w = 2;
    edit(a);
    return Layer<MaxPool2dAttrs>("p", a, {}, "default");
  };
  auto none = [](Pool2dWindow&) {};
  ExpectError("kernel 0", ErrorKind::kInvalidArgument,
              "kernel_w must be >= 1, got 0",
              [&] { make_max([](Pool2dWindow& a) { a.kernel_w = 0; }); });
  ExpectError("stride 0", ErrorKind::kInvalidArgument,
              "stride_h must be >= 1, got 0",
              [&] { make_max([](Pool2dWindow& a) { a.stride_h = 0; }); });
  ExpectError("dilation 0", ErrorKind::kInvalidArgument,
              "dilation_w must be >= 1, got 0",
              [&] { make_max([](Pool2dWindow& a) { a.dilation_w = 0; }); });
  // PyTorch's int32 limit; near 2^62 the output size's sum wrapped (found
  // by tests/fuzz).
  ExpectError(
      "kernel 2^31", ErrorKind::kInvalidArgument,
      "kernel_h must be at most 2147483647", [&] {
        make_max([](Pool2dWindow& a) { a.kernel_h = int64_t{1} << 31; });
      });
  ExpectError(
      "stride 2^62", ErrorKind::kInvalidArgument,
      "stride_w must be at most 2147483647", [&] {
        make_max([](Pool2dWindow& a) { a.stride_w = int64_t{1} << 62; });
      });
  ExpectError("negative padding", ErrorKind::kInvalidArgument,
              "padding must be >= 0",
              [&] { make_max([](Pool2dWindow& a) { a.pad_left = -1; }); });
  ExpectError("padding over half the kernel", ErrorKind::kInvalidArgument,
              "padding should be at most half of kernel size",
              [&] { make_max([](Pool2dWindow& a) { a.pad_bottom = 2; }); });
  ExpectError("padding over half an even kernel", ErrorKind::kInvalidArgument,
              "padding should be at most half of kernel size", [&] {
                make_max([](Pool2dWindow& a) {
                  a.kernel_w = 2;
                  a.pad_right = 2;
                });
              });
  ExpectError("params", ErrorKind::kInvalidArgument,
              "maxpool2d takes no parameter tensors, got 1", [&] {
                Tensor param{x.data(), DType::kFloat32, {1}};
                Layer<MaxPool2dAttrs>("p", MaxPool2dAttrs{}, {param},
                                      "default");
              });

  auto layer = make_max(none);
  auto shape = [&](Shape s, Layout layout = Layout::kNCHW) {
    return layer.OutputShape(
        Tensor{x.data(), DType::kFloat32, std::move(s), {}, layout});
  };
  ExpectError("rank 3", ErrorKind::kShape,
              "expected a rank-4 NCHW input (N, C, H, W), got rank 3 (1, 4, 4)",
              [&] { shape({1, 4, 4}); });
  ExpectError("zero channels", ErrorKind::kShape,
              "input (1, 0, 4, 4) (NCHW) has 0 channels and spatial size 4x4",
              [&] { shape({1, 0, 4, 4}); });
  ExpectError("zero height", ErrorKind::kShape, "spatial size 0x4",
              [&] { shape({1, 2, 0, 4}); });
  ExpectError("output too small", ErrorKind::kShape,
              "gives an output of spatial size 0x1, which is too small",
              [&] { shape({1, 2, 2, 4}); });
  ExpectError("mismatched output", ErrorKind::kShape, "expected float32", [&] {
    layer.Forward(Tensor{x.data(), DType::kFloat32, {1, 1, 5, 5}},
                  Tensor{y.data(), DType::kFloat32, {1, 1, 3, 3}});
  });
  // An empty batch is fine: an empty output, nothing read or written.
  Check(shape({0, 3, 5, 5}) == Shape{0, 3, 2, 2}, "empty batch, NCHW");
  {
    auto nhwc = make_max([](Pool2dWindow& a) { a.layout = Layout::kNHWC; });
    Tensor in{nullptr, DType::kFloat32, {0, 5, 5, 3}, {}, Layout::kNHWC};
    Tensor out{nullptr, DType::kFloat32, {0, 2, 2, 3}, {}, Layout::kNHWC};
    Check(nhwc.OutputShape(in) == out.shape, "empty batch, NHWC");
    nhwc.Forward(in, out);
    ExpectError(
        "zero channels NHWC", ErrorKind::kShape,
        "input (1, 4, 4, 0) (NHWC) has 0 channels", [&] {
          nhwc.OutputShape(Tensor{
              x.data(), DType::kFloat32, {1, 4, 4, 0}, {}, Layout::kNHWC});
        });
  }

  struct AvgError {
    const char* what;
    const char* message;
    void (*edit)(AvgPool2dAttrs&);
  };
  for (const AvgError& e : std::vector<AvgError>{
           {"avgpool dilation", "dilation must be 1x1, got 2x1",
            [](AvgPool2dAttrs& a) {
              a.kernel_h = a.kernel_w = 2;
              a.dilation_h = 2;
            }},
           {"avgpool padding", "padding should be at most half of kernel size",
            [](AvgPool2dAttrs& a) {
              a.kernel_h = a.kernel_w = 2;
              a.pad_top = 2;
            }},
           {"divisor_override",
            "divisor_override must be >= 1, or 0 for none; got -1",
            [](AvgPool2dAttrs& a) { a.divisor_override = -1; }}}) {
    ExpectError(e.what, ErrorKind::kInvalidArgument, e.message, [&] {
      AvgPool2dAttrs a;
      e.edit(a);
      Layer<AvgPool2dAttrs>("p", a, {}, "default");
    });
  }
  ExpectError("adaptive output 0", ErrorKind::kInvalidArgument,
              "output size must be >= 1x1, got 0x3", [&] {
                AdaptiveAvgPool2dAttrs a;
                a.output_h = 0;
                a.output_w = 3;
                Layer<AdaptiveAvgPool2dAttrs>("p", a, {}, "default");
              });
  {
    AdaptiveAvgPool2dAttrs a;
    a.output_h = 2;
    a.output_w = 2;
    Layer<AdaptiveAvgPool2dAttrs> adaptive("p", a, {}, "default");
    ExpectError(
        "adaptive rank 2", ErrorKind::kShape, "expected a rank-4 NCHW input",
        [&] {
          adaptive.OutputShape(Tensor{x.data(), DType::kFloat32, {4, 4}});
        });
    ExpectError(
        "adaptive zero width", ErrorKind::kShape, "spatial size 4x0", [&] {
          adaptive.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 1, 4, 0}});
        });
    Tensor in{nullptr, DType::kFloat64, {0, 3, 5, 5}};
    Tensor out{nullptr, DType::kFloat64, {0, 3, 2, 2}};
    Check(adaptive.OutputShape(in) == out.shape, "adaptive empty batch");
    adaptive.Forward(in, out);
  }
}

}  // namespace

int Main() {
  const std::vector<Window> windows = {
      // n  c   h   w kh kw sh sw pt pb pl pr dh dw ceil
      {1, 3, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false},
      {2, 4, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false},
      {2, 4, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},
      {1, 5, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1, 2, 2, false},
      {1, 2, 11, 13, 3, 2, 2, 3, 1, 0, 0, 1, 1, 1, true},
      {1, 3, 5, 5, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, true},
      {3, 16, 6, 6, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, true},
      {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, false},
      {1, 1, 1, 1, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, true},
      {1, 2, 1, 7, 1, 3, 1, 2, 0, 0, 1, 1, 1, 1, true},
      {2, 8, 15, 15, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, true},
      {1, 3, 4, 4, 4, 4, 1, 1, 2, 2, 2, 2, 1, 1, false},
      {1, 3, 4, 5, 4, 4, 3, 3, 2, 0, 1, 2, 1, 1, true},
      {1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 3, 3, false},  // all-padding taps
      {1, 3, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1, true},
      {1, 64, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false},
      {2, 7, 6, 5, 2, 3, 1, 2, 1, 0, 1, 1, 1, 1, false},
      {1, 3, 12, 12, 3, 3, 5, 4, 0, 1, 1, 0, 1, 1, true},
      // NHWC: 43 channels run a 4-vector block, single vectors and scalar
      // lanes in float32 and float64.
      {1, 43, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},
      // 3-wide windows at column stride 1 and 2 (maxpool2d's sliding
      // column maxima): GoogLeNet's branch pool (3x3, stride 1, pad 1,
      // ceil), its unpadded stride-2 pools, and a 2-row window at mixed
      // strides with uneven padding.
      {1, 43, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {2, 19, 9, 8, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, true},
      {1, 9, 6, 7, 2, 3, 1, 2, 0, 1, 1, 0, 1, 1, false},
      // NCHW's sliding 3-wide windows fill a buffer 256 output columns at a
      // time: rows across that chunk at stride 2 and 1 (two chunks and a
      // tail), a 5-row window, and uneven padding.
      {1, 2, 5, 600, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},
      {1, 2, 4, 530, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {1, 2, 9, 40, 5, 3, 2, 1, 2, 2, 1, 1, 1, 1, false},
      {1, 3, 7, 21, 3, 3, 1, 2, 0, 1, 0, 1, 1, 1, true},
  };
  const std::vector<ImageDims> adaptive_inputs = {
      {1, 3, 8, 8},
      {2, 4, 7, 9},
      {1, 2, 5, 5},
      {1, 3, 4, 4},
      {2, 5, 10, 7},
      {1, 16, 13, 11},
      {1, 1, 1, 1},
      {2, 8, 56, 56},
      // Vector and scalar channel tails, where NHWC splits a global pool's
      // window by rows over the threads (batch 1) or not (batch 3).
      {1, 40, 6, 5},
      {1, 96, 7, 7},
      {3, 37, 4, 4},
  };
  const std::vector<std::pair<int64_t, int64_t>> adaptive_outputs = {
      {1, 1}, {2, 2}, {3, 4}, {7, 7}, {5, 3}, {8, 8}};

  // Average pooling has no dilation.
  std::vector<Window> undilated;
  for (const Window& p : windows) {
    if (p.dh == 1 && p.dw == 1) undilated.push_back(p);
  }
  struct Adaptive {
    ImageDims in;
    int64_t oh, ow;
  };
  std::vector<Adaptive> adaptive;
  for (const ImageDims& in : adaptive_inputs) {
    for (auto [oh, ow] : adaptive_outputs) adaptive.push_back({in, oh, ow});
  }

  int ran = testing::RunEachLayout(
      testing::CpuAlgorithms<MaxPool2dAttrs>(), windows,
      [](auto zero, const Window& p, Layout layout,
         const std::string& algorithm) {
        for (bool with_nan : {false, true}) {
          MaxPoolCase<decltype(zero)>(p, layout, algorithm, with_nan);
        }
      });
  ran += testing::RunEachLayout(
      testing::CpuAlgorithms<AvgPool2dAttrs>(), undilated,
      [](auto zero, const Window& p, Layout layout,
         const std::string& algorithm) {
        for (bool cip : {true, false}) {
          for (int64_t divisor : {0, 7}) {
            AvgPoolCase<decltype(zero)>(p, cip, divisor, layout, algorithm);
          }
        }
      });
  ran += testing::RunEachLayout(
      testing::CpuAlgorithms<AdaptiveAvgPool2dAttrs>(), adaptive,
      [](auto zero, const Adaptive& p, Layout layout,
         const std::string& algorithm) {
        AdaptiveCase<decltype(zero)>(p.in, p.oh, p.ow, layout, algorithm);
      });
  Check(ran > 0, "pool2d algorithms registered");
  KnownValues();
  ErrorCases();
  return testing::Summary("pool2d", ran);
}

}  // namespace ai3
