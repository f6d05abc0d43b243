// Every registered CPU rmsnorm algorithm against the definition (in
// double) over 1 to 3 normalised trailing dims, with and without a weight,
// several eps, float32 and float64; then the errors bad attributes,
// weights and inputs must raise.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/rmsnorm/rmsnorm.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

struct Case {
  Shape shape;
  int64_t axes;
  bool weight;
  double eps;
};

template <typename T>
void RunCase(T, const Case& p, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  const int64_t total = NumElements(p.shape);
  const Shape tail(p.shape.end() - p.axes, p.shape.end());
  const int64_t d = NumElements(tail);
  auto x = testing::Cast<T>(testing::RandomVector(total, 7));
  auto w = testing::Cast<T>(testing::RandomVector(d, 8));
  std::vector<double> want(total);
  for (int64_t r = 0; r < total / d; ++r) {
    double sq = 0;
    for (int64_t i = 0; i < d; ++i) sq += double(x[r * d + i]) * x[r * d + i];
    const double rstd = 1 / std::sqrt(sq / d + p.eps);
    for (int64_t i = 0; i < d; ++i) {
      want[r * d + i] = x[r * d + i] * rstd * (p.weight ? double(w[i]) : 1.0);
    }
  }
  RmsNormAttrs a;
  a.axes = p.axes;
  a.eps = p.eps;
  a.has_weight = p.weight;
  a.dtype = dtype;
  if (p.weight) a.normalized_shape = tail;
  std::vector<Tensor> params;
  if (p.weight) params.push_back(Tensor{w.data(), dtype, tail});
  Layer<RmsNormAttrs> layer("rms", a, params, algorithm);
  Tensor xt{x.data(), dtype, p.shape};
  const std::string desc = algorithm + " " + Name(dtype) + " " +
                           ToString(p.shape) + " axes " +
                           std::to_string(p.axes);
  Check(layer.OutputShape(xt) == p.shape, desc + ": output shape");
  std::vector<T> y(total, T(-42));
  layer.Forward(xt, Tensor{y.data(), dtype, p.shape});
  Check(testing::MaxRelativeError(y, want) < (sizeof(T) == 4 ? 1e-5 : 1e-12),
        desc);
}

void ErrorCases() {
  std::vector<float> w(8), x(64);
  RmsNormAttrs a;
  a.has_bias = true;
  a.normalized_shape = {8};
  ExpectError(
      "bias", ErrorKind::kInvalidArgument, "rmsnorm takes no bias", [&] {
        Layer<RmsNormAttrs>("rms", a, {Tensor{w.data(), DType::kFloat32, {8}}},
                            "direct");
      });
  RmsNormAttrs b;
  b.has_weight = true;
  b.normalized_shape = {8};
  Layer<RmsNormAttrs> layer("rms", b, {Tensor{w.data(), DType::kFloat32, {8}}},
                            "direct");
  ExpectError("shape", ErrorKind::kShape, "but the weights are shaped", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {4, 4}});
  });
  RmsNormAttrs c;
  c.axes = 0;
  ExpectError("axes", ErrorKind::kInvalidArgument, "axes (the number",
              [&] { Layer<RmsNormAttrs>("rms", c, {}, "direct"); });
}

}  // namespace

int Main() {
  const std::vector<Case> cases = {
      {{1, 1}, 1, false, 1e-6},   {{2, 3, 8}, 1, true, 1e-5},
      {{4, 5, 6}, 2, true, 1e-3}, {{2, 3, 4, 5}, 3, false, 0.0},
      {{7}, 1, true, 1e-6},       {{64, 512}, 1, true, 1e-6},
  };
  const int ran =
      testing::RunEach(testing::CpuAlgorithms<RmsNormAttrs>(), cases,
                       [](auto... args) { RunCase(args...); });
  ErrorCases();
  return testing::Summary("rmsnorm", ran);
}

}  // namespace ai3
