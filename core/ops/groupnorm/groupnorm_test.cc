// Every registered CPU groupnorm algorithm against the definition (in
// double) over groups (1, some, one per channel = instance norm, and 0 =
// instance norm), with and without weight / bias, several eps, ranks 2 to
// 5, NCHW and NHWC, float32 and float64; a group with a large mean (no
// cancellation); then the errors bad attributes and inputs must raise.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/groupnorm/groupnorm.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

struct Case {
  Shape shape;  // NCHW-style: (N, C, spatial...)
  int64_t groups;
  bool weight, bias;
  double eps, offset;  // offset: added to x (a large mean)
};

// Channels-first x of shape (N, C, S) -> y, in double.
std::vector<double> Reference(const Case& p, const std::vector<double>& x,
                              const std::vector<double>& w,
                              const std::vector<double>& b) {
  const int64_t n = p.shape[0], c = p.shape[1];
  const int64_t s = NumElements(p.shape) / (n * c);
  const int64_t groups = p.groups ? p.groups : c, cg = c / groups;
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t g = 0; g < groups; ++g) {
      const double* xb = x.data() + (i * c + g * cg) * s;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < cg * s; ++k) mean += xb[k];
      mean /= double(cg * s);
      for (int64_t k = 0; k < cg * s; ++k)
        var += (xb[k] - mean) * (xb[k] - mean);
      var /= double(cg * s);
      for (int64_t k = 0; k < cg * s; ++k) {
        const int64_t ch = g * cg + k / s;
        y[(i * c + g * cg) * s + k] =
            (xb[k] - mean) / std::sqrt(var + p.eps) * (p.weight ? w[ch] : 1) +
            (p.bias ? b[ch] : 0);
      }
    }
  return y;
}

template <typename T>
void RunCase(T, const Case& p, Layout layout, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  const int64_t n = p.shape[0], c = p.shape[1];
  const int64_t s = NumElements(p.shape) / (n * c);
  auto x0 = testing::RandomVector(n * c * s, 4);
  for (double& v : x0) v += p.offset;
  const auto xt0 = testing::Cast<T>(x0);
  const auto wt = testing::Cast<T>(testing::RandomVector(c, 5));
  const auto bt = testing::Cast<T>(testing::RandomVector(c, 6));
  std::vector<double> xd(xt0.begin(), xt0.end());
  auto want = Reference(p, xd, {wt.begin(), wt.end()}, {bt.begin(), bt.end()});
  Shape shape = p.shape;
  if (layout == Layout::kNHWC) testing::ToChannelsLast(&shape, {&xd, &want});
  auto x = testing::Cast<T>(xd);
  GroupNormAttrs a;
  a.groups = p.groups;
  a.eps = p.eps;
  a.has_weight = p.weight;
  a.has_bias = p.bias;
  a.channels = (p.weight || p.bias) ? c : 0;
  a.dtype = dtype;
  a.layout = layout;
  auto w = wt, b = bt;
  std::vector<Tensor> params;
  if (p.weight) params.push_back(Tensor{w.data(), dtype, {c}});
  if (p.bias) params.push_back(Tensor{b.data(), dtype, {c}});
  Layer<GroupNormAttrs> layer("gn", a, params, algorithm);
  Tensor xt{x.data(), dtype, shape};
  const std::string desc = algorithm + " " + Name(dtype) + " " + Name(layout) +
                           " " + ToString(shape) + " groups " +
                           std::to_string(p.groups);
  Check(layer.OutputShape(xt) == shape, desc + ": output shape");
  std::vector<T> y(want.size(), T(-42));
  layer.Forward(xt, Tensor{y.data(), dtype, shape});
  const double tol = sizeof(T) == 4 ? (p.offset ? 1e-3 : 1e-4) : 1e-9;
  Check(testing::MaxRelativeError(y, want) < tol, desc);
}

void ErrorCases() {
  std::vector<float> w(6), x(48);
  GroupNormAttrs a;
  a.groups = 4;
  a.has_weight = true;
  a.channels = 6;
  ExpectError("groups divide", ErrorKind::kInvalidArgument,
              "groups=4 must divide the 6 channels", [&] {
                Layer<GroupNormAttrs>("gn", a,
                                      {Tensor{w.data(), DType::kFloat32, {6}}},
                                      "direct");
              });
  a.groups = 3;
  ExpectError("weight shape", ErrorKind::kShape,
              "weight has shape (2, 3), expected (6,)", [&] {
                Layer<GroupNormAttrs>(
                    "gn", a, {Tensor{w.data(), DType::kFloat32, {2, 3}}},
                    "direct");
              });
  Layer<GroupNormAttrs> layer("gn", a, {Tensor{w.data(), DType::kFloat32, {6}}},
                              "direct");
  ExpectError(
      "channels", ErrorKind::kShape, "has 4 channels, the weights 6",
      [&] { layer.OutputShape(Tensor{x.data(), DType::kFloat32, {2, 4, 6}}); });
  ExpectError("rank", ErrorKind::kShape, "expected an input of rank >= 2", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {6}});
  });
  GroupNormAttrs free;
  free.groups = 5;
  Layer<GroupNormAttrs> unweighted("gn", free, {}, "direct");
  ExpectError(
      "input channels", ErrorKind::kShape, "not divisible into 5 groups", [&] {
        unweighted.OutputShape(Tensor{x.data(), DType::kFloat32, {2, 4, 6}});
      });
  GroupNormAttrs neg;
  neg.eps = -1;
  ExpectError("eps", ErrorKind::kInvalidArgument, "eps must be finite",
              [&] { Layer<GroupNormAttrs>("gn", neg, {}, "direct"); });
}

}  // namespace

int Main() {
  const std::vector<Case> cases = {
      {{1, 1}, 1, false, false, 1e-5, 0},
      {{2, 6, 5, 4}, 3, true, true, 1e-5, 0},
      {{2, 6, 5, 4}, 1, true, false, 1e-3, 0},
      {{2, 6, 5, 4}, 6, false, true, 1e-5, 0},      // instance norm
      {{3, 4, 7}, 0, true, true, 1e-5, 0},          // groups 0: instance
      {{1, 8, 2, 3, 2}, 2, true, true, 0.1, 0},     // rank 5
      {{2, 6}, 2, false, false, 1e-5, 0},           // no spatial dims
      {{1, 4, 16, 16}, 2, true, true, 1e-5, 1000},  // large mean
      {{2, 64, 28, 28}, 32, true, true, 1e-5, 0},   // threaded
  };
  const int ran =
      testing::RunEachLayout(testing::CpuAlgorithms<GroupNormAttrs>(), cases,
                             [](auto... args) { RunCase(args...); });
  ErrorCases();
  return testing::Summary("groupnorm", ran);
}

}  // namespace ai3
