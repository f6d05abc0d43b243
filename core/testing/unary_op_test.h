// The test every elementwise op shares: every registered CPU algorithm
// against the op's definition computed in double, over tensors of several
// ranks and sizes (including empty and rank-0, and large and extreme
// values), in float32 and float64; NaN must pass through as in PyTorch,
// infinities must map exactly. Plus the op's error cases.
#ifndef AI3_CORE_TESTING_UNARY_OP_TEST_H_
#define AI3_CORE_TESTING_UNARY_OP_TEST_H_

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3::testing {

// Relative tolerance per dtype; 0: the result must equal the definition
// rounded to the dtype exactly (relu, clamp).
struct UnaryTolerance {
  double f32 = 1e-6;
  double f64 = 1e-14;
};

// One layer of `attrs` over a tensor of `shape` against `reference`;
// `label` (e.g. the attributes) goes into the failure message.
template <class Attrs, typename T, class Ref>
void RunUnaryCase(const Attrs& attrs, const Ref& reference,
                  const std::string& label, UnaryTolerance tolerance,
                  const Shape& shape, const std::string& algorithm) {
  const DType dtype = DTypeOf<T>();
  const int64_t n = NumElements(shape);
  auto xd = testing::RandomVector(n, 7);
  for (double& v : xd) v *= 8;  // cover the tails, not just [-1, 1]
  if (n > 7) {
    xd[1] = std::numeric_limits<double>::quiet_NaN();
    xd[2] = 0.0;
    xd[3] = -std::numeric_limits<double>::infinity();
    xd[4] = std::numeric_limits<double>::infinity();
    xd[5] = -200.0;
    xd[6] = 200.0;
    xd[7] = 6.0;  // relu6's bound, exactly
  }
  auto x = testing::Cast<T>(xd);
  std::vector<T> y(n, T(-42));
  Layer<Attrs> layer("test", attrs, {}, algorithm);
  Tensor xt{x.data(), dtype, shape};
  Tensor yt{y.data(), dtype, shape};
  std::string desc =
      algorithm + " " + Name(dtype) + " " + ToString(shape) + label;
  Check(layer.OutputShape(xt) == shape, desc + ": output shape");
  layer.Forward(xt, yt);
  const double tol = std::is_same_v<T, double> ? tolerance.f64 : tolerance.f32;
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    // The definition rounded to the dtype (exp(200) is inf in float32).
    const double want = double(static_cast<T>(reference(double(x[i]))));
    if (std::isnan(want)) {
      ok &= std::isnan(y[i]);
    } else if (std::isinf(want)) {
      ok &= double(y[i]) == want;
    } else if (tol == 0) {
      ok &= y[i] == static_cast<T>(want);
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

// Every registered CPU algorithm of the elementwise op over every shape of
// the grid, in both dtypes, with `attrs`; returns how many cases ran.
template <class Attrs, class Ref>
int RunUnaryCases(const Attrs& attrs, const Ref& reference,
                  const std::string& label = "",
                  UnaryTolerance tolerance = {}) {
  const std::vector<Shape> shapes = {
      {},  {1},       {5},      {3, 7},          {2, 3, 4, 5}, {1, 64, 56, 56},
      {0}, {4, 0, 3}, {100003}, {2, 3, 1, 1, 2},
  };
  return RunEach(CpuAlgorithms<Attrs>(), shapes,
                 [&](auto zero, const Shape& s, const std::string& algorithm) {
                   RunUnaryCase<Attrs, decltype(zero)>(attrs, reference, label,
                                                       tolerance, s, algorithm);
                 });
}

// What every elementwise op refuses: weights, an output of another dtype
// or shape.
template <class Attrs>
void UnaryErrorCases() {
  const std::string op = Attrs::kOp;
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
}

// That a layer of `attrs` is refused when it is made, with an
// InvalidArgument naming the layer ('l') and saying `text`.
template <class Attrs>
void ExpectRefused(const std::string& what, const Attrs& attrs,
                   const std::string& text) {
  ExpectError(what, ErrorKind::kInvalidArgument,
              std::string(Attrs::kOp) + " layer 'l': " + text,
              [&] { Layer<Attrs>("l", attrs, {}, "default"); });
}

// The whole test of an elementwise op with default attributes against
// `reference` (the definition in double); returns Main()'s exit status.
template <class Attrs>
int RunUnaryOpTest(double (*reference)(double), UnaryTolerance tolerance = {}) {
  const int ran = RunUnaryCases(Attrs{}, reference, "", tolerance);
  UnaryErrorCases<Attrs>();
  return Summary(Attrs::kOp, ran);
}

}  // namespace ai3::testing

#endif  // AI3_CORE_TESTING_UNARY_OP_TEST_H_
