// What the cc_tests of linear's three gradient ops share: shapes of x (any
// rank >= 1), naive double references of the gradients of
// y = clamp(x W^T + b), and a driver running one gradient op's algorithm on
// a case in either dtype, plus the bad inputs every one must refuse.
#ifndef AI3_CORE_OPS_LINEAR_BACKWARD_LINEAR_BACKWARD_TESTING_H_
#define AI3_CORE_OPS_LINEAR_BACKWARD_LINEAR_BACKWARD_TESTING_H_

#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/linear/backward/linear_backward.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3::testing {

struct LinearGradCase {
  Shape x;  // the last dimension is in_features
  int64_t out;
  bool bias;
};

inline std::vector<LinearGradCase> LinearGradCases() {
  return {
      {{4, 3}, 5, true},       {{7}, 3, false},          // unbatched
      {{2, 3, 6}, 4, true},    {{2, 2, 2, 9}, 1, true},  // leading dims
      {{33, 70}, 65, false},   {{0, 5}, 3, true},        // empty batch
      {{130, 129}, 131, true},
  };
}

// dz = dy where the clamp let z = x W^T + b through; then dx = dz W,
// dW = dz^T x, db = the column sums of dz.
struct LinearGradients {
  std::vector<double> y, dx, dw, db;
};

inline LinearGradients ReferenceLinearGradients(
    int64_t m, int64_t in, int64_t out, const std::vector<double>& x,
    const std::vector<double>& w, const std::vector<double>& b, bool bias,
    const std::vector<double>& dy, const Activation& act) {
  LinearGradients g{std::vector<double>(m * out), std::vector<double>(m * in),
                    std::vector<double>(out * in), std::vector<double>(out)};
  const auto bounds = act.As<double>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double z = bias ? b[o] : 0;
      for (int64_t j = 0; j < in; ++j) z += x[i * in + j] * w[o * in + j];
      const double y = bounds(z);
      g.y[i * out + o] = y;
      const double dz =
          !act.enabled || (y > act.min && y < act.max) ? dy[i * out + o] : 0;
      for (int64_t j = 0; j < in; ++j) {
        g.dx[i * in + j] += dz * w[o * in + j];
        g.dw[o * in + j] += dz * x[i * in + j];
      }
      g.db[o] += dz;
    }
  return g;
}

template <class Attrs, typename T>
void RunLinearGradCase(const LinearGradCase& p, const std::string& algorithm,
                       const Activation& act) {
  const DType dtype =
      std::is_same_v<T, double> ? DType::kFloat64 : DType::kFloat32;
  const int64_t in = p.x.back(), m = NumElements(p.x) / in;
  Attrs a;
  a.in_features = in;
  a.out_features = p.out;
  a.has_bias = p.bias;
  a.dtype = dtype;
  a.activation = act;
  auto xd = RandomVector(m * in, 1), wd = RandomVector(p.out * in, 2),
       bd = RandomVector(p.out, 3), dyd = RandomVector(m * p.out, 4);
  LinearGradients ref =
      ReferenceLinearGradients(m, in, p.out, xd, wd, bd, p.bias, dyd, act);
  const std::vector<double>& want =
      std::is_same_v<Attrs, LinearBackwardDataAttrs>     ? ref.dx
      : std::is_same_v<Attrs, LinearBackwardWeightAttrs> ? ref.dw
                                                         : ref.db;
  auto x = Cast<T>(xd), w = Cast<T>(wd), b = Cast<T>(bd), dy = Cast<T>(dyd),
       y = Cast<T>(ref.y);
  std::vector<Tensor> params = {Tensor{w.data(), dtype, {p.out, in}}};
  if (p.bias) params.push_back(Tensor{b.data(), dtype, {p.out}});
  MultiLayer<Attrs> layer("test", a, params, algorithm);
  Shape y_shape = p.x;
  y_shape.back() = p.out;
  const std::vector<Tensor> inputs = {Tensor{dy.data(), dtype, y_shape},
                                      Tensor{x.data(), dtype, p.x},
                                      Tensor{y.data(), dtype, y_shape}};
  const Shape out_shape = layer.OutputShape(inputs);
  std::vector<T> result(NumElements(out_shape),
                        std::numeric_limits<T>::quiet_NaN());
  layer.Forward(inputs, Tensor{result.data(), dtype, out_shape});
  layer.Forward(inputs, Tensor{result.data(), dtype, out_shape});
  const double err = MaxRelativeError(result, want);
  const double tol = std::is_same_v<T, double> ? 1e-10 : 2e-4;
  Check(err <= tol,
        std::string(Attrs::kOp) + " " + algorithm + " " + Name(dtype) + " x " +
            ToString(p.x) + " out " + std::to_string(p.out) + " act " +
            std::to_string(act.enabled) + ": err " + std::to_string(err));
}

template <class Attrs>
void LinearGradBadInputs() {
  Attrs a;
  a.in_features = 3;
  a.out_features = 2;
  std::vector<float> w(6), buf(100);
  std::vector<double> buf64(100);
  const std::vector<Tensor> params = {
      Tensor{w.data(), DType::kFloat32, {2, 3}}};
  MultiLayer<Attrs> layer("g", a, params, "direct");
  auto t = [&](Shape s) { return Tensor{buf.data(), DType::kFloat32, s}; };
  const std::string op = std::string(Attrs::kOp) + " layer 'g'";
  ExpectError(op + " y shape", ErrorKind::kShape, "input 2 (y) is (4, 2)",
              [&] { layer.OutputShape({t({5, 2}), t({5, 3}), t({4, 2})}); });
  ExpectError(op + " grad_output shape", ErrorKind::kShape,
              "input 0 (grad_output) is (5, 3)",
              [&] { layer.OutputShape({t({5, 3}), t({5, 3}), t({5, 2})}); });
  ExpectError(op + " x features", ErrorKind::kShape,
              op + " (direct): input 1 (x): expected an input",
              [&] { layer.OutputShape({t({5, 2}), t({5, 4}), t({5, 2})}); });
  ExpectError(op + " dtypes", ErrorKind::kDType, "input 2 is float64", [&] {
    layer.OutputShape(
        {t({5, 2}), t({5, 3}), Tensor{buf64.data(), DType::kFloat64, {5, 2}}});
  });
  ExpectError(op + " unknown algorithm", ErrorKind::kUnknownAlgorithm,
              "unknown " + std::string(Attrs::kOp) + " algorithm 'nope'",
              [&] { MultiLayer<Attrs>("g", a, params, "nope"); });
}

// main() of a linear gradient op's cc_test.
template <class Attrs>
int RunLinearGradTest() {
  LinearGradBadInputs<Attrs>();
  const auto cases = LinearGradCases();
  int ran = 0;
  for (const std::string& algorithm : CpuAlgorithms<Attrs>()) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const Activation& act =
          i % 3 == 0 ? Activation{}
          : i % 3 == 1
              ? Activation::Clamp(0.0, std::numeric_limits<double>::infinity())
              : Activation::Clamp(-0.3, 0.4);
      RunLinearGradCase<Attrs, float>(cases[i], algorithm, act);
      RunLinearGradCase<Attrs, double>(cases[i], algorithm, act);
      ran += 2;
    }
  }
  return Summary(Attrs::kOp, ran);
}

}  // namespace ai3::testing

#endif  // AI3_CORE_OPS_LINEAR_BACKWARD_LINEAR_BACKWARD_TESTING_H_
