// Every registered CPU pad2d algorithm against the definition, over NCHW
// and NHWC inputs of several sizes, symmetric, asymmetric, one-sided and
// zero pads, several fill values and every mode (reflect up to its limit,
// dim - 1; circular up to the dim), in float32 and float64; then the
// errors bad pads and inputs must raise.
#include <algorithm>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/pad2d/pad2d.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

struct Case {
  int64_t n, c, h, w;
  int64_t top, bottom, left, right;
  double value;
  PadMode mode = PadMode::kConstant;
};

// The input index output index i reads along a dim of n, written out from
// each mode's definition (torch's reflect / replicate / circular).
int64_t SourceOf(int64_t i, int64_t n, PadMode mode) {
  switch (mode) {
    case PadMode::kReflect: {
      if (n == 1) return 0;  // no pad can reflect a single row
      const int64_t period = 2 * (n - 1);
      int64_t j = ((i % period) + period) % period;
      return j < n ? j : period - j;
    }
    case PadMode::kReplicate:
      return std::min(std::max(i, int64_t{0}), n - 1);
    default:
      return ((i % n) + n) % n;
  }
}

// The reference, NCHW, in double.
std::vector<double> Reference(const Case& p, const std::vector<double>& x) {
  const int64_t oh = p.h + p.top + p.bottom, ow = p.w + p.left + p.right;
  std::vector<double> y(p.n * p.c * oh * ow, p.value);
  if (p.mode != PadMode::kConstant) {
    for (int64_t nc = 0; nc < p.n * p.c; ++nc)
      for (int64_t h = 0; h < oh; ++h)
        for (int64_t w = 0; w < ow; ++w)
          y[(nc * oh + h) * ow + w] =
              x[(nc * p.h + SourceOf(h - p.top, p.h, p.mode)) * p.w +
                SourceOf(w - p.left, p.w, p.mode)];
    return y;
  }
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t h = 0; h < p.h; ++h)
        for (int64_t w = 0; w < p.w; ++w)
          y[((n * p.c + c) * oh + h + p.top) * ow + w + p.left] =
              x[((n * p.c + c) * p.h + h) * p.w + w];
  return y;
}

// T(0) picks the dtype (testing::RunEach).
template <typename T>
void RunCase(T, const Case& p, Layout layout, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  // Rounded to T first, so the reference holds exactly the layer's values.
  const auto xt0 =
      testing::Cast<T>(testing::RandomVector(p.n * p.c * p.h * p.w, 3));
  std::vector<double> xd(xt0.begin(), xt0.end());
  auto want = Reference(p, xd);
  const int64_t oh = p.h + p.top + p.bottom, ow = p.w + p.left + p.right;
  if (layout == Layout::kNHWC) {
    xd = testing::ToNhwc(xd, p.n, p.c, p.h, p.w);
    want = testing::ToNhwc(want, p.n, p.c, oh, ow);
  }
  auto x = testing::Cast<T>(xd);
  Pad2dAttrs a;
  a.pad_top = p.top;
  a.pad_bottom = p.bottom;
  a.pad_left = p.left;
  a.pad_right = p.right;
  a.value = p.value;
  a.mode = p.mode;
  a.layout = layout;
  Layer<Pad2dAttrs> layer("pad", a, {}, algorithm);
  const Shape in_shape = ImageShape({p.n, p.c, p.h, p.w}, layout);
  const Shape out_shape = ImageShape({p.n, p.c, oh, ow}, layout);
  Tensor xt{x.data(), dtype, in_shape};
  std::string desc = algorithm + " " + Name(dtype) + " " + Name(layout) + " " +
                     ToString(in_shape) + " pads " + std::to_string(p.top) +
                     "," + std::to_string(p.bottom) + "," +
                     std::to_string(p.left) + "," + std::to_string(p.right) +
                     " mode " + std::to_string(static_cast<int>(p.mode));
  Check(layer.OutputShape(xt) == out_shape, desc + ": output shape");
  std::vector<T> y(want.size(), T(-42));
  layer.Forward(xt, Tensor{y.data(), dtype, out_shape});
  bool ok = true;
  for (size_t i = 0; i < y.size(); ++i) ok &= y[i] == static_cast<T>(want[i]);
  Check(ok, desc);
}

void ErrorCases() {
  Pad2dAttrs a;
  a.pad_left = -1;
  ExpectError("negative pad", ErrorKind::kInvalidArgument,
              "pad2d layer 'p': pads must be >= 0",
              [&] { Layer<Pad2dAttrs>("p", a, {}, "default"); });
  std::vector<float> w(1);
  ExpectError("params", ErrorKind::kInvalidArgument,
              "pad2d takes no parameter tensors, got 1", [&] {
                Layer<Pad2dAttrs>("p", Pad2dAttrs{},
                                  {Tensor{w.data(), DType::kFloat32, {1}}},
                                  "default");
              });
  Pad2dAttrs ok;
  ok.pad_top = 1;
  Layer<Pad2dAttrs> layer("p", ok, {}, "direct");
  std::vector<float> x(24);
  ExpectError("rank", ErrorKind::kShape,
              "pad2d layer 'p' (direct): expected a rank-4 NCHW input", [&] {
                layer.OutputShape(Tensor{x.data(), DType::kFloat32, {2, 12}});
              });
  ExpectError("empty image", ErrorKind::kShape, "has spatial size 0x3", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 2, 0, 3}});
  });
  // Pads whose sum wraps int64 gave a negative output size, and pads whose
  // output overflows in bytes a shape no buffer can hold (found by
  // tests/fuzz).
  // reflect's pads stop one short of the dim, circular's at it.
  Pad2dAttrs reflect;
  reflect.mode = PadMode::kReflect;
  reflect.pad_left = 3;
  ExpectError(
      "reflect limit", ErrorKind::kInvalidArgument,
      "reflect padding needs each pad < the size of its dim", [&] {
        Layer<Pad2dAttrs>("p", reflect, {}, "direct")
            .OutputShape(Tensor{x.data(), DType::kFloat32, {1, 2, 4, 3}});
      });
  Pad2dAttrs circular;
  circular.mode = PadMode::kCircular;
  circular.pad_bottom = 5;
  ExpectError(
      "circular limit", ErrorKind::kInvalidArgument,
      "circular padding needs each pad <= the size of its dim", [&] {
        Layer<Pad2dAttrs>("p", circular, {}, "direct")
            .OutputShape(Tensor{x.data(), DType::kFloat32, {1, 2, 4, 3}});
      });
  Pad2dAttrs huge;
  huge.pad_top = huge.pad_bottom = int64_t{1} << 62;
  const Tensor one{x.data(), DType::kFloat32, {1, 1, 1, 1}};
  ExpectError("pads overflow", ErrorKind::kShape,
              "the vertical padding overflows int64", [&] {
                Layer<Pad2dAttrs>("p", huge, {}, "direct").OutputShape(one);
              });
  Pad2dAttrs big;
  big.pad_top = big.pad_left = int64_t{1} << 40;
  ExpectError("output too large", ErrorKind::kShape, "is too large", [&] {
    Layer<Pad2dAttrs>("p", big, {}, "direct").OutputShape(one);
  });
}

}  // namespace

int Main() {
  std::vector<Case> cases = {
      {1, 1, 1, 1, 1, 1, 1, 1, 0.0},    {2, 3, 5, 7, 1, 1, 1, 1, 0.0},
      {1, 4, 6, 6, 0, 1, 0, 1, 0.0},    {2, 3, 4, 5, 2, 0, 3, 1, -1.5},
      {1, 2, 3, 3, 0, 0, 0, 0, 0.0},    {3, 1, 2, 9, 0, 0, 4, 0, 2.0},
      {1, 3, 7, 2, 5, 3, 0, 0, 0.25},   {0, 3, 4, 4, 1, 1, 1, 1, 0.0},
      {4, 32, 56, 56, 1, 1, 1, 1, 0.0},  // large enough to run threaded
  };
  for (PadMode mode :
       {PadMode::kReflect, PadMode::kReplicate, PadMode::kCircular}) {
    const int64_t most = mode == PadMode::kReflect ? 1 : 0;  // short of dim
    for (Case c : std::vector<Case>{
             {2, 3, 5, 7, 1, 1, 1, 1, 0.0},
             {1, 2, 4, 5, 2, 0, 3, 1, 0.0},
             {1, 3, 2, 2, 1, 1, 1, 1, 0.0},
             {2, 2, 6, 4, 5 - most, 6 - most, 4 - most, 0, 0.0},  // limit
             {1, 1, 1, 3, 0, 0, 2 - most, 1, 0.0},
             {4, 32, 56, 56, 1, 1, 1, 1, 0.0},  // threaded
         }) {
      c.mode = mode;
      cases.push_back(c);
    }
  }
  const int ran =
      testing::RunEachLayout(testing::CpuAlgorithms<Pad2dAttrs>(), cases,
                             [](auto... args) { RunCase(args...); });
  ErrorCases();
  return testing::Summary("pad2d", ran);
}

}  // namespace ai3
