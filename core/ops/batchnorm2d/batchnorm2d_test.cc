// Every registered CPU batchnorm2d algorithm against the definition
// (x - mean) / sqrt(var + eps) * gamma + beta computed in double, over NCHW
// and NHWC inputs of several sizes in float32 and float64; then the errors
// bad parameters and inputs must raise.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

struct Case {
  int64_t n, c, h, w;
  double eps;
  // Another rank's spatial dims (BatchNorm1d, BatchNorm3d), whose product
  // is h * w; none: the rank-4 (h, w).
  std::optional<Shape> spatial = std::nullopt;
};

// The case's input shape in `layout`: channels at dim 1 or last.
Shape InputShape(const Case& p, Layout layout) {
  if (!p.spatial) return ImageShape({p.n, p.c, p.h, p.w}, layout);
  Shape shape = {p.n};
  if (layout == Layout::kNCHW) shape.push_back(p.c);
  shape.insert(shape.end(), p.spatial->begin(), p.spatial->end());
  if (layout == Layout::kNHWC) shape.push_back(p.c);
  return shape;
}

// The reference, NCHW, in double.
std::vector<double> Reference(const Case& p, const std::vector<double>& x,
                              const std::vector<double>& gamma,
                              const std::vector<double>& beta,
                              const std::vector<double>& mean,
                              const std::vector<double>& var) {
  std::vector<double> y(x.size());
  const int64_t hw = p.h * p.w;
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t c = 0; c < p.c; ++c) {
      for (int64_t i = 0; i < hw; ++i) {
        const int64_t at = (n * p.c + c) * hw + i;
        y[at] =
            (x[at] - mean[c]) / std::sqrt(var[c] + p.eps) * gamma[c] + beta[c];
      }
    }
  }
  return y;
}

// T(0) picks the dtype (testing::RunEach).
template <typename T>
void RunCase(T, const Case& p, Layout layout, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  const int64_t numel = p.n * p.c * p.h * p.w;
  auto xd = testing::RandomVector(numel, 11);
  auto gamma = testing::RandomVector(p.c, 12);
  auto beta = testing::RandomVector(p.c, 13);
  auto mean = testing::RandomVector(p.c, 14);
  auto var = testing::RandomVector(p.c, 15);
  for (double& v : var) v = std::fabs(v) + 0.1;
  auto want = Reference(p, xd, gamma, beta, mean, var);
  if (layout == Layout::kNHWC) {
    xd = testing::ToNhwc(xd, p.n, p.c, p.h, p.w);
    want = testing::ToNhwc(want, p.n, p.c, p.h, p.w);
  }
  // Cast the parameters and the input once, so the reference and the layer
  // see the same rounded values in float32.
  auto x = testing::Cast<T>(xd);
  auto g = testing::Cast<T>(gamma), b = testing::Cast<T>(beta);
  auto m = testing::Cast<T>(mean), v = testing::Cast<T>(var);
  BatchNorm2dAttrs a;
  a.channels = p.c;
  a.eps = p.eps;
  a.dtype = dtype;
  a.layout = layout;
  const Shape pshape = {p.c};
  Layer<BatchNorm2dAttrs> layer(
      "bn", a,
      {Tensor{g.data(), dtype, pshape}, Tensor{b.data(), dtype, pshape},
       Tensor{m.data(), dtype, pshape}, Tensor{v.data(), dtype, pshape}},
      algorithm);
  const Shape shape = InputShape(p, layout);
  std::vector<T> y(numel, T(-42));
  Tensor xt{x.data(), dtype, shape};
  std::string desc = algorithm + " " + Name(dtype) + " " + Name(layout) + " " +
                     ToString(shape);
  Check(layer.OutputShape(xt) == shape, desc + ": output shape");
  layer.Forward(xt, Tensor{y.data(), dtype, shape});
  const double tol = std::is_same_v<T, double> ? 1e-12 : 1e-5;
  double err = testing::MaxRelativeError(y, want);
  Check(err <= tol, desc + ": max relative error " + std::to_string(err));
}

void ErrorCases() {
  std::vector<float> p4(4), p3(3);
  std::vector<double> d4(4);
  const Tensor c4{p4.data(), DType::kFloat32, {4}};
  const Tensor c3{p3.data(), DType::kFloat32, {3}};
  const Tensor f64{d4.data(), DType::kFloat64, {4}};
  BatchNorm2dAttrs a;
  a.channels = 4;
  auto make = [&](const BatchNorm2dAttrs& attrs, std::vector<Tensor> params) {
    Layer<BatchNorm2dAttrs>("bn1", attrs, params, "default");
  };
  ExpectError("param count", ErrorKind::kInvalidArgument,
              "batchnorm2d layer 'bn1': expected 4 parameter tensors",
              [&] { make(a, {c4, c4, c4}); });
  ExpectError("param shape", ErrorKind::kShape,
              "running_var has shape (3,), expected (4,)",
              [&] { make(a, {c4, c4, c4, c3}); });
  ExpectError("param dtype", ErrorKind::kDType,
              "running_mean is float64, layer is float32",
              [&] { make(a, {c4, c4, f64, c4}); });
  BatchNorm2dAttrs bad_eps = a;
  bad_eps.eps = -1;
  ExpectError("eps", ErrorKind::kInvalidArgument, "eps must be finite",
              [&] { make(bad_eps, {c4, c4, c4, c4}); });
  BatchNorm2dAttrs no_channels = a;
  no_channels.channels = 0;
  ExpectError("channels", ErrorKind::kInvalidArgument, "channels must be >= 1",
              [&] { make(no_channels, {}); });

  Layer<BatchNorm2dAttrs> layer("bn2", a, {c4, c4, c4, c4}, "direct");
  std::vector<float> x(2 * 3 * 5 * 5);
  ExpectError(
      "channels mismatch", ErrorKind::kShape,
      "batchnorm2d layer 'bn2' (direct): input (2, 3, 5, 5) (NCHW) "
      "has 3 channels, the layer expects 4",
      [&] {
        layer.OutputShape(Tensor{x.data(), DType::kFloat32, {2, 3, 5, 5}});
      });
  ExpectError(
      "rank", ErrorKind::kShape,
      "expected an input of rank 2 or more (channels at dim 1), got "
      "rank 1",
      [&] { layer.OutputShape(Tensor{x.data(), DType::kFloat32, {4}}); });
  ExpectError(
      "dtype", ErrorKind::kDType, "input is float64 but weights are float32",
      [&] {
        layer.OutputShape(Tensor{x.data(), DType::kFloat64, {1, 4, 1, 1}});
      });
}

}  // namespace

int Main() {
  const std::vector<Case> cases = {
      {1, 1, 1, 1, 1e-5},
      {2, 3, 5, 7, 1e-5},
      {1, 16, 8, 8, 1e-3},
      {4, 64, 28, 28, 1e-5},  // large enough to run threaded
      {3, 17, 1, 1, 0.0},
      {0, 5, 4, 4, 1e-5},
      {2, 5, 0, 3, 1e-5},
      // ranks 2, 3 and 5: BatchNorm1d and BatchNorm3d
      {3, 6, 1, 1, 1e-5, Shape{}},
      {2, 6, 7, 1, 1e-5, Shape{7}},
      {2, 4, 60, 1, 1e-5, Shape{3, 4, 5}},
  };
  const int ran =
      testing::RunEachLayout(testing::CpuAlgorithms<BatchNorm2dAttrs>(), cases,
                             [](auto... args) { RunCase(args...); });
  ErrorCases();
  return testing::Summary("batchnorm2d", ran);
}

}  // namespace ai3
