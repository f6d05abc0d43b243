// log_softmax against the definition in double (x - max - log(sum exp(x -
// max))) over every axis of tensors of rank 0 to 4, inner sizes past one
// block, large values and rows whose small entries would underflow in
// log(softmax); both dtypes; then the errors.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/log_softmax/log_softmax.h"
#include "core/ops/softmax/reference.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

template <typename T>
void Case(const Shape& shape, int64_t axis) {
  const DType dtype = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  const int64_t n = NumElements(shape);
  auto xd = testing::RandomVector(n, 8);
  for (double& v : xd) v *= 10;
  if (n > 3) {
    xd[1] = 500;
    xd[3] = -300;
  }
  auto x = testing::Cast<T>(xd);
  LogSoftmaxAttrs a;
  a.axis = axis;
  Layer<LogSoftmaxAttrs> layer("ls", a, {}, "direct");
  std::vector<T> y(n, T(-42));
  layer.Forward(Tensor{x.data(), dtype, shape}, Tensor{y.data(), dtype, shape});
  std::vector<double> want(n);
  testing::ForEachReferenceSlice(shape, axis, [&](auto at, int64_t len) {
    double m = -INFINITY, sum = 0;
    for (int64_t k = 0; k < len; ++k) m = std::fmax(m, double(x[at(k)]));
    for (int64_t k = 0; k < len; ++k) sum += std::exp(double(x[at(k)]) - m);
    for (int64_t k = 0; k < len; ++k) {
      want[at(k)] = double(x[at(k)]) - m - std::log(sum);
    }
  });
  const double tol = sizeof(T) == 8 ? 1e-13 : 2e-6;
  const double err = testing::MaxRelativeError(y, want);
  Check(err <= tol, std::string("log_softmax ") + Name(dtype) + " " +
                        ToString(shape) + " axis " + std::to_string(axis) +
                        ": max relative error " + std::to_string(err));
}

}  // namespace

int Main() {
  const std::vector<Shape> shapes = {{},        {1},         {9},
                                     {3, 5},    {2, 3, 4},   {1, 1000},
                                     {2, 0, 3}, {2, 5, 300}, {2, 3, 4, 5}};
  int ran = 0;
  for (const Shape& s : shapes) {
    const int64_t rank = static_cast<int64_t>(s.size());
    const int64_t span = rank == 0 ? 1 : rank;
    for (int64_t axis = -span; axis < span; ++axis) {
      Case<float>(s, axis);
      Case<double>(s, axis);
      ran += 2;
    }
  }
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  LogSoftmaxAttrs a;
  a.axis = 2;
  Layer<LogSoftmaxAttrs> layer("ls", a, {}, "direct");
  ExpectError("axis", ErrorKind::kShape,
              "log_softmax layer 'ls' (direct): axis 2 is out of range",
              [&] { layer.OutputShape(xt); });
  ExpectError("params", ErrorKind::kInvalidArgument,
              "log_softmax takes no parameter tensors, got 1", [&] {
                Layer<LogSoftmaxAttrs>("ls", LogSoftmaxAttrs{}, {xt}, "direct");
              });
  return testing::Summary("log_softmax", ran);
}

}  // namespace ai3
