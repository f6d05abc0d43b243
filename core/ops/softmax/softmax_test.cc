// Every registered CPU softmax algorithm against the definition computed in
// double (exp(x - max) / sum), over every axis (positive and negative) of
// tensors of rank 0 to 5, including rows long enough to thread, inner sizes
// beyond one block, empty dims and large values that would overflow without
// the max subtraction; then the errors for a bad axis.
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/softmax/reference.h"
#include "core/ops/softmax/softmax.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

std::vector<double> Reference(const Shape& shape, int64_t axis,
                              const std::vector<double>& x) {
  std::vector<double> y(x.size());
  testing::ForEachReferenceSlice(shape, axis, [&](auto at, int64_t len) {
    double m = -INFINITY;
    for (int64_t k = 0; k < len; ++k) m = std::fmax(m, x[at(k)]);
    double sum = 0;
    for (int64_t k = 0; k < len; ++k) sum += std::exp(x[at(k)] - m);
    for (int64_t k = 0; k < len; ++k) y[at(k)] = std::exp(x[at(k)] - m) / sum;
  });
  return y;
}

template <typename T>
void RunCase(const Shape& shape, int64_t axis, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  const int64_t n = NumElements(shape);
  auto xd = testing::RandomVector(n, 5);
  for (double& v : xd) v *= 10;
  if (n > 2) xd[2] = 500.0;  // exp(500) overflows float and double
  auto x = testing::Cast<T>(xd);
  auto want = Reference(shape, axis, std::vector<double>(x.begin(), x.end()));
  std::vector<T> y(n, T(-42));
  SoftmaxAttrs a;
  a.axis = axis;
  Layer<SoftmaxAttrs> layer("test", a, {}, algorithm);
  Tensor xt{x.data(), dtype, shape};
  std::string desc = algorithm + " " + Name(dtype) + " " + ToString(shape) +
                     " axis " + std::to_string(axis);
  Check(layer.OutputShape(xt) == shape, desc + ": output shape");
  layer.Forward(xt, Tensor{y.data(), dtype, shape});
  const double tol = std::is_same_v<T, double> ? 1e-13 : 1e-5;
  double err = testing::MaxRelativeError(y, want);
  Check(err <= tol, desc + ": max relative error " + std::to_string(err));
}

}  // namespace

int Main() {
  const std::vector<Shape> shapes = {
      {},
      {1},
      {7},
      {3, 5},
      {2, 3, 4},
      {2, 3, 4, 5},
      {1, 1000},
      {1, 300, 7, 3},
      {2, 0, 3},
      {4, 1, 1},
      {2, 3, 1, 2, 2},
      {64, 1024},
      {2, 16, 600},
  };
  // Every axis of every shape (a rank-0 tensor's only axis is 0 or -1).
  std::vector<std::pair<Shape, int64_t>> cases;
  for (const Shape& s : shapes) {
    const int64_t rank = static_cast<int64_t>(s.size());
    const int64_t span = rank == 0 ? 1 : rank;
    for (int64_t axis = -span; axis < span; ++axis) cases.push_back({s, axis});
  }
  const int ran = testing::RunEach(
      testing::CpuAlgorithms<SoftmaxAttrs>(), cases,
      [](auto zero, const auto& c, const std::string& algorithm) {
        RunCase<decltype(zero)>(c.first, c.second, algorithm);
      });
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  ExpectError("params", ErrorKind::kInvalidArgument,
              "softmax takes no parameter tensors, got 1", [&] {
                Layer<SoftmaxAttrs>("s", SoftmaxAttrs{}, {xt}, "default");
              });
  SoftmaxAttrs bad;
  bad.axis = 2;
  Layer<SoftmaxAttrs> layer("s", bad, {}, "direct");
  ExpectError("axis", ErrorKind::kShape,
              "softmax layer 's' (direct): axis 2 is out of range for a "
              "rank-2 input (2, 3) (expected -2 to 1)",
              [&] { layer.OutputShape(xt); });
  bad.axis = -3;
  Layer<SoftmaxAttrs> layer2("s", bad, {}, "direct");
  ExpectError("negative axis", ErrorKind::kShape, "axis -3 is out of range",
              [&] { layer2.OutputShape(xt); });
  return testing::Summary("softmax", ran);
}

}  // namespace ai3
