// gelu against its definitions: the exact form through the shared
// elementwise-op test, the tanh form on a grid of values in both dtypes.
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/layer.h"
#include "core/ops/gelu/gelu.h"
#include "core/testing/reference.h"
#include "core/testing/unary_op_test.h"

namespace ai3 {
namespace {

double GeluTanh(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

template <typename T>
void TanhCase(DType dtype, double tol) {
  std::vector<T> x;
  for (double v = -12; v <= 12; v += 0.01) x.push_back(T(v));
  x.push_back(T(-300));
  x.push_back(T(300));
  std::vector<T> y(x.size());
  GeluAttrs a;
  a.approximate = GeluAttrs::Approximate::kTanh;
  Layer<GeluAttrs> layer("g", a, {}, "direct");
  const Shape shape = {static_cast<int64_t>(x.size())};
  layer.Forward(Tensor{x.data(), dtype, shape}, Tensor{y.data(), dtype, shape});
  std::vector<double> want;
  for (T v : x) want.push_back(GeluTanh(double(v)));
  const double err = testing::MaxRelativeError(y, want);
  testing::Check(err <= tol, std::string("gelu tanh ") + Name(dtype) +
                                 ": max relative error " + std::to_string(err));
}

}  // namespace
}  // namespace ai3

int ai3::Main() {
  ai3::TanhCase<float>(ai3::DType::kFloat32, 1e-6);
  ai3::TanhCase<double>(ai3::DType::kFloat64, 1e-14);
  return ai3::testing::RunUnaryOpTest<ai3::GeluAttrs>(
      [](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); });
}
