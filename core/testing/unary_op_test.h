// The test every parameter-free elementwise op shares: every registered
// CPU algorithm against the op's definition computed in double, over tensors
// of several ranks and sizes (including empty and rank-0, and large and
// extreme values), in float32 and float64; NaN must pass through as in
// PyTorch, infinities must map exactly. Plus the op's error cases.
#ifndef AI3_CORE_TESTING_UNARY_OP_TEST_H_
#define AI3_CORE_TESTING_UNARY_OP_TEST_H_

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/registry.h"
#include "core/testing/reference.h"

namespace ai3::testing {

template <class Attrs, typename T>
void RunUnaryCase(double (*reference)(double), const Shape& shape,
                  const std::string& algorithm) {
  const DType dtype =
      std::is_same_v<T, double> ? DType::kFloat64 : DType::kFloat32;
  const int64_t n = NumElements(shape);
  auto xd = testing::RandomVector(n, 7);
  for (double& v : xd) v *= 8;  // cover the tails, not just [-1, 1]
  if (n > 6) {
    xd[1] = std::numeric_limits<double>::quiet_NaN();
    xd[2] = 0.0;
    xd[3] = -std::numeric_limits<double>::infinity();
    xd[4] = std::numeric_limits<double>::infinity();
    xd[5] = -200.0;
    xd[6] = 200.0;
  }
  auto x = testing::Cast<T>(xd);
  std::vector<T> y(n, T(-42));
  Layer<Attrs> layer("test", Attrs{}, {}, algorithm);
  Tensor xt{x.data(), dtype, shape};
  Tensor yt{y.data(), dtype, shape};
  std::string desc = algorithm + " " + Name(dtype) + " " + ToString(shape);
  Check(layer.OutputShape(xt) == shape, desc + ": output shape");
  layer.Forward(xt, yt);
  const double tol = std::is_same_v<T, double> ? 1e-14 : 1e-6;
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    const double want = reference(double(x[i]));
    if (std::isnan(want)) {
      ok &= std::isnan(y[i]);
    } else if (std::isinf(want)) {
      ok &= double(y[i]) == want;
    } else {
      ok &= std::fabs(double(y[i]) - want) <= tol * (1 + std::fabs(want));
    }
    if (!ok) {
      Check(false, desc + " at " + std::to_string(i) + ": x " +
                       std::to_string(double(x[i])) + " got " +
                       std::to_string(double(y[i])) + " want " +
                       std::to_string(want));
      return;
    }
  }
}

// Runs every registered algorithm of the elementwise op `Attrs` against
// `reference` (the definition in double); returns main()'s exit status.
template <class Attrs>
int RunUnaryOpTest(double (*reference)(double)) {
  const std::string op = Attrs::kOp;
  const std::vector<Shape> shapes = {
      {},           {1},             {5},   {3, 7},
      {2, 3, 4, 5}, {1, 64, 56, 56}, {0},   {4, 0, 3},
      {100003},     {2, 3, 1, 1, 2},
  };
  const std::vector<std::string> names =
      Registry<Attrs>::Get().Names(Device::kCPU);
  Check(!names.empty() && names[0] == "direct", op + " 'direct' registered");
  int ran = 0;
  for (const std::string& algorithm : names) {
    for (const Shape& s : shapes) {
      RunUnaryCase<Attrs, float>(reference, s, algorithm);
      RunUnaryCase<Attrs, double>(reference, s, algorithm);
      ran += 2;
    }
  }
  std::vector<float> x(4);
  Tensor xt{x.data(), DType::kFloat32, {4}};
  ExpectError("params", ErrorKind::kInvalidArgument,
              op + " takes no parameter tensors, got 1",
              [&] { Layer<Attrs>("s", Attrs{}, {xt}, "default"); });
  Layer<Attrs> layer("s", Attrs{}, {}, "default");
  ExpectError("mixed dtypes", ErrorKind::kShape, "expected float32 (4,)", [&] {
    std::vector<double> y(4);
    layer.Forward(xt, Tensor{y.data(), DType::kFloat64, {4}});
  });
  ExpectError("output shape", ErrorKind::kShape, "expected float32 (4,)", [&] {
    std::vector<float> y(4);
    layer.Forward(xt, Tensor{y.data(), DType::kFloat32, {2, 2}});
  });
  std::printf("%s: %d cases ran over %zu algorithms, %d failed\n", op.c_str(), ran,
              names.size(), testing::Failures());
  return testing::Failures() != 0;
}

}  // namespace ai3::testing

#endif  // AI3_CORE_TESTING_UNARY_OP_TEST_H_
