// Every registered CPU linear algorithm against a naive reference over a grid
// of shapes, in float32 and float64 (where it takes them); then the errors bad
// weights and inputs must raise.
#include <cstdio>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/linear/linear.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

struct Case {
  Shape lead;  // the batch dimensions in front of in_features
  int64_t in, out;
  bool bias;
};

// y[m, o] = sum_k x[m, k] w[o, k] + b[o], in double.
std::vector<double> Reference(int64_t m, const Case& p,
                              const std::vector<double>& x,
                              const std::vector<double>& w,
                              const std::vector<double>& b) {
  std::vector<double> y(m * p.out);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t o = 0; o < p.out; ++o) {
      double acc = p.bias ? b[o] : 0;
      for (int64_t k = 0; k < p.in; ++k) {
        acc += x[i * p.in + k] * w[o * p.in + k];
      }
      y[i * p.out + o] = acc;
    }
  return y;
}

LinearAttrs AttrsOf(const Case& p, DType dtype) {
  LinearAttrs a;
  a.in_features = p.in;
  a.out_features = p.out;
  a.has_bias = p.bias;
  a.dtype = dtype;
  return a;
}

// The fused activations the algorithms apply as they write y: none, ReLU,
// a two-sided clamp whose bounds the outputs cross, and GELU in its exact
// and tanh forms (a transformer MLP's linear -> GELU).
const Activation kActivations[] = {
    Activation{},
    Activation::Clamp(0.0, std::numeric_limits<double>::infinity()),
    Activation::Clamp(-0.3, 0.4),
    Activation::Function(ActivationFn::kGelu),
    Activation::Function(ActivationFn::kGeluTanh),
};

template <typename T>
void RunCase(const Case& p, const std::string& algorithm,
             const Activation& act) {
  const DType dtype = testing::DTypeOf<T>();
  LinearAttrs a = AttrsOf(p, dtype);
  a.activation = act;
  const int64_t m = NumElements(p.lead);
  auto xd = testing::RandomVector(m * p.in, 1);
  auto wd = testing::RandomVector(p.out * p.in, 2);
  auto bd = testing::RandomVector(p.out, 3);
  auto want = Reference(m, p, xd, wd, bd);
  for (double& v : want) v = act.As<double>()(v);
  auto x = testing::Cast<T>(xd);
  auto w = testing::Cast<T>(wd);
  auto b = testing::Cast<T>(bd);
  std::vector<T> y(want.size());

  std::vector<Tensor> params = {Tensor{w.data(), dtype, {p.out, p.in}}};
  if (p.bias) params.push_back(Tensor{b.data(), dtype, {p.out}});
  Layer<LinearAttrs> layer("test", a, params, algorithm);
  Shape in_shape = p.lead, out_shape = p.lead;
  in_shape.push_back(p.in);
  out_shape.push_back(p.out);
  Tensor xt{x.data(), dtype, in_shape};
  Tensor yt{y.data(), dtype, out_shape};
  std::string desc =
      algorithm + " " + Name(dtype) + " input " + ToString(in_shape) + " out " +
      std::to_string(p.out) + " bias " + std::to_string(p.bias) +
      (act.enabled
           ? std::string(" act ") + ActivationFnName(act.fn) + " [" +
                 std::to_string(act.min) + ", " + std::to_string(act.max) + "]"
           : "");
  Check(layer.OutputShape(xt) == out_shape, desc + ": output shape");
  layer.Forward(xt, yt);
  layer.Forward(xt, yt);  // a second call must give the same answer
  double err = testing::MaxRelativeError(y, want);
  double tol = std::is_same_v<T, double> ? 1e-10 : 1e-4;
  Check(err <= tol, desc + ": err " + std::to_string(err));
}

// Runs fn, which must throw ai3::Error of `kind` whose message contains
// `text`.

void ErrorCases() {
  std::vector<float> w(12), b(4), x(100), y(100);
  LinearAttrs a = AttrsOf({{}, 3, 4, true}, DType::kFloat32);
  Tensor wt{w.data(), DType::kFloat32, {4, 3}};
  Tensor bt{b.data(), DType::kFloat32, {4}};
  ExpectError("bad in_features", ErrorKind::kInvalidArgument,
              "in_features must be >= 1", [&] {
                LinearAttrs bad = a;
                bad.in_features = 0;
                Layer<LinearAttrs>("l", bad, {wt, bt}, "default");
              });
  ExpectError("missing bias", ErrorKind::kInvalidArgument,
              "expected 2 parameter tensors",
              [&] { Layer<LinearAttrs>("l", a, {wt}, "default"); });
  ExpectError("transposed weight", ErrorKind::kShape, "expected (4, 3)", [&] {
    Tensor t = wt;
    t.shape = {3, 4};
    Layer<LinearAttrs>("l", a, {t, bt}, "default");
  });
  ExpectError("bad bias", ErrorKind::kShape, "bias has shape (3,)", [&] {
    Tensor t = bt;
    t.shape = {3};
    Layer<LinearAttrs>("l", a, {wt, t}, "default");
  });
  ExpectError("weight dtype", ErrorKind::kDType, "weights are float32", [&] {
    LinearAttrs d = a;
    d.dtype = DType::kFloat64;
    Layer<LinearAttrs>("l", d, {wt, bt}, "default");
  });
  ExpectError("guess in float64", ErrorKind::kAlgorithmNotApplicable,
              "no float64", [&] {
                std::vector<double> wd(12), bd(4);
                LinearAttrs d = a;
                d.dtype = DType::kFloat64;
                Layer<LinearAttrs>("l", d,
                                   {Tensor{wd.data(), DType::kFloat64, {4, 3}},
                                    Tensor{bd.data(), DType::kFloat64, {4}}},
                                   "guess");
              });
  ExpectError("unknown algorithm", ErrorKind::kUnknownAlgorithm, "winograd",
              [&] { Layer<LinearAttrs>("l", a, {wt, bt}, "winograd"); });

  Layer<LinearAttrs> layer("l", a, {wt, bt}, "default");
  Check(layer.algorithm() == "guess",
        "default float32 linear algorithm is guess, got " + layer.algorithm());
  {
    std::vector<double> wd(12), bd(4);
    LinearAttrs d = a;
    d.dtype = DType::kFloat64;
    Layer<LinearAttrs> f64("l", d,
                           {Tensor{wd.data(), DType::kFloat64, {4, 3}},
                            Tensor{bd.data(), DType::kFloat64, {4}}},
                           "default");
    Check(f64.algorithm() == "gemm",
          "default float64 linear algorithm is gemm, got " + f64.algorithm());
  }
  // From 256 to 8192 input features "default" is packed, in both dtypes.
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    LinearAttrs wide = a;
    wide.in_features = 256;
    wide.dtype = dtype;
    std::vector<double> wd(4 * 256), bd(4);
    const Tensor w_wide{wd.data(), dtype, {4, 256}},
        b_wide{bd.data(), dtype, {4}};
    Layer<LinearAttrs> l("l", wide, {w_wide, b_wide}, "default");
    Check(l.algorithm() == "packed",
          "default linear algorithm at 256 input features is packed, got " +
              l.algorithm());
  }
  ExpectError("wrong in_features", ErrorKind::kShape,
              "last dimension is in_features=3, got shape (2, 5)", [&] {
                layer.OutputShape(Tensor{x.data(), DType::kFloat32, {2, 5}});
              });
  ExpectError("rank 0", ErrorKind::kShape, "rank >= 1", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {}});
  });
  ExpectError("input dtype", ErrorKind::kDType, "input is float64", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat64, {2, 3}});
  });
  ExpectError("output shape", ErrorKind::kShape, "expected float32 (2, 4)",
              [&] {
                layer.Forward(Tensor{x.data(), DType::kFloat32, {2, 3}},
                              Tensor{y.data(), DType::kFloat32, {2, 3}});
              });
  // An empty batch is fine: an empty output, nothing read or written.
  Tensor empty_in{nullptr, DType::kFloat32, {0, 3}};
  Tensor empty_out{nullptr, DType::kFloat32, {0, 4}};
  Check(layer.OutputShape(empty_in) == Shape{0, 4}, "empty batch shape");
  layer.Forward(empty_in, empty_out);
  Tensor empty_in3{nullptr, DType::kFloat32, {2, 0, 3}};
  Check(layer.OutputShape(empty_in3) == Shape{2, 0, 4}, "empty middle dim");
}

}  // namespace

int Main() {
  const std::vector<Case> cases = {
      // lead        in   out  bias
      {{1}, 1, 1, true},
      {{}, 7, 5, true},  // rank-1 input
      {{4}, 16, 8, false},
      {{3}, 5, 9, true},
      {{2, 3}, 6, 4, true},  // rank-3 input: two batch dimensions
      {{2, 1, 3}, 10, 7, false},
      {{17}, 33, 31, true},
      {{64}, 128, 100, true},
      {{5}, 300, 1, true},
      {{1}, 1000, 10, true},
      {{130}, 257, 65, false},
      // x over twice a 2 MiB L2: packed takes its rows in chunks.
      {{1100}, 1000, 70, true},
  };
  int ran = 0;
  const std::vector<std::string> names =
      Registry<LinearAttrs>::Get().Names(Device::kCPU);
  for (const char* want : {"gemm", "direct", "guess", "packed"}) {
    bool found = false;
    for (const std::string& n : names) found |= n == want;
    Check(found, std::string("linear algorithm '") + want + "' registered");
  }
  for (const std::string& algorithm : names) {
    for (size_t i = 0; i < cases.size(); ++i) {
      // Each case with one activation in turn (see kActivations).
      const Activation& act = kActivations[i % std::size(kActivations)];
      for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
        // guess (oneDNN) has no float64: an algorithm runs where it says
        // it can.
        const Algorithm<LinearAttrs>* found =
            Registry<LinearAttrs>::Get().Named(algorithm, Device::kCPU);
        if (!found->WhyNot(AttrsOf(cases[i], dtype)).empty()) continue;
        if (dtype == DType::kFloat32) {
          RunCase<float>(cases[i], algorithm, act);
        } else {
          RunCase<double>(cases[i], algorithm, act);
        }
        ++ran;
      }
    }
  }
  ErrorCases();
  std::printf("linear: %d cases ran over %zu algorithms, %d failed\n", ran,
              names.size(), testing::Failures());
  return testing::Failures() != 0;
}

}  // namespace ai3
