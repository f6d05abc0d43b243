// layernorm against the definition in double over shapes and axes counts,
// with and without weight/bias, rows with a large mean, both dtypes; then
// the errors.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/layernorm/layernorm.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

template <typename T>
void Case(const Shape& in, int64_t axes, bool w, bool b) {
  const DType dtype = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  auto xd = testing::RandomVector(NumElements(in), 4);
  for (size_t i = 0; i < xd.size(); ++i) {
    xd[i] = xd[i] * 3 + (i % 7 == 0 ? 100 : 0);  // some rows far from 0
  }
  auto x = testing::Cast<T>(xd);
  const Shape norm(in.end() - axes, in.end());
  const int64_t d = NumElements(norm);
  auto wv = testing::Cast<T>(testing::RandomVector(d, 5));
  auto bv = testing::Cast<T>(testing::RandomVector(d, 6));
  LayerNormAttrs a;
  a.axes = axes;
  a.eps = 1e-5;
  a.has_weight = w;
  a.has_bias = b;
  a.dtype = dtype;
  std::vector<Tensor> params;
  if (w) params.push_back(Tensor{wv.data(), dtype, norm});
  if (b) params.push_back(Tensor{bv.data(), dtype, norm});
  if (w || b) a.normalized_shape = norm;
  Layer<LayerNormAttrs> layer("ln", a, params, "direct");
  std::vector<T> y(x.size(), T(-9));
  Tensor xt{x.data(), dtype, in};
  layer.Forward(xt, Tensor{y.data(), dtype, layer.OutputShape(xt)});
  std::vector<double> want(x.size());
  const int64_t rows = d ? NumElements(in) / d : 0;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += double(x[r * d + i]);
    mean /= d;
    for (int64_t i = 0; i < d; ++i) {
      var += (double(x[r * d + i]) - mean) * (double(x[r * d + i]) - mean);
    }
    var /= d;
    for (int64_t i = 0; i < d; ++i) {
      want[r * d + i] = (double(x[r * d + i]) - mean) / std::sqrt(var + 1e-5) *
                            (w ? double(wv[i]) : 1.0) +
                        (b ? double(bv[i]) : 0.0);
    }
  }
  const double tol = sizeof(T) == 8 ? 1e-12 : 3e-5;
  const double err = testing::MaxRelativeError(y, want);
  Check(err <= tol, std::string("layernorm ") + Name(dtype) + " " +
                        ToString(in) + " axes " + std::to_string(axes) +
                        (w ? " w" : "") + (b ? " b" : "") +
                        ": max relative error " + std::to_string(err));
}

}  // namespace

int Main() {
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{4, 8}, 1}, {{2, 197, 96}, 1}, {{2, 3, 4, 5}, 2}, {{2, 3, 4, 5}, 3},
      {{7}, 1},    {{2, 0, 5}, 1},    {{3, 1}, 1},       {{64, 768}, 1},
  };
  int ran = 0;
  for (const auto& [shape, axes] : cases) {
    for (int wb = 0; wb < 4; ++wb) {
      Case<float>(shape, axes, wb & 1, wb & 2);
      Case<double>(shape, axes, wb & 1, wb & 2);
      ran += 2;
    }
  }
  std::vector<float> w(4), x(24);
  LayerNormAttrs a;
  a.axes = 1;
  a.has_weight = true;
  a.normalized_shape = {4};
  Layer<LayerNormAttrs> layer("ln", a, {Tensor{w.data(), DType::kFloat32, {4}}},
                              "direct");
  Tensor xt{x.data(), DType::kFloat32, {4, 6}};
  ExpectError("trailing", ErrorKind::kShape,
              "layernorm layer 'ln' (direct): input (4, 6) ends in (6,) but "
              "the weights are shaped (4,)",
              [&] { layer.OutputShape(xt); });
  a.axes = 0;
  ExpectError("axes", ErrorKind::kInvalidArgument, "must be >= 1", [&] {
    Layer<LayerNormAttrs>("ln", a, {Tensor{w.data(), DType::kFloat32, {4}}},
                          "direct");
  });
  a.axes = 2;
  a.normalized_shape = {};
  a.has_weight = false;
  Layer<LayerNormAttrs> deep("ln", a, {}, "direct");
  Tensor v{x.data(), DType::kFloat32, {24}};
  ExpectError("rank", ErrorKind::kShape, "fewer than the 2 dims",
              [&] { deep.OutputShape(v); });
  return testing::Summary("layernorm", ran);
}

}  // namespace ai3
