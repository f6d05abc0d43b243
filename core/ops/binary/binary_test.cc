// The binary ops against a naive broadcasting reference in double,
// over pairs of shapes covering equal shapes, scalars, leading and inner
// broadcasts, both operands broadcast, empty dims and a long row that
// threads; the constant forms (x op c and c op x); the same ops run as
// multi-input nodes of an ai3::Model; and the errors.
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/graph.h"
#include "core/layer.h"
#include "core/ops/binary/binary.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

double ApplyRef(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kPow:
      return std::pow(a, b);
    case BinaryOp::kMaximum:
      return std::isnan(a) || a > b ? a : b;
    case BinaryOp::kMinimum:
      return std::isnan(a) || a < b ? a : b;
    case BinaryOp::kPrelu:
      return a < 0 ? a * b : a;
    case BinaryOp::kRemainder:
      return a - std::floor(a / b) * b;
    case BinaryOp::kFmod:
      return std::fmod(a, b);
  }
  return 0;
}

// Element `flat` of `out` read from a tensor of shape `s` (right-aligned,
// size-1 dims broadcast).
int64_t SourceIndex(const Shape& s, const Shape& out, int64_t flat) {
  int64_t index = 0, stride = 1;
  for (int i = static_cast<int>(out.size()) - 1; i >= 0; --i) {
    const int64_t coord = flat % out[i];
    flat /= out[i];
    const int j = i - static_cast<int>(out.size() - s.size());
    if (j < 0) continue;
    if (s[j] != 1) index += coord * stride;
    stride *= s[j];
  }
  return index;
}

template <class Attrs, typename T>
void RunCase(const Shape& sa, const Shape& sb, const Shape& want_shape,
             bool constant, bool reverse) {
  const DType dtype = testing::DTypeOf<T>();
  auto ad = testing::RandomVector(NumElements(sa), 3);
  auto bd = testing::RandomVector(NumElements(sb), 4);
  for (double& v : bd) v += v >= 0 ? 0.5 : -0.5;  // keep divisors off 0
  if (Attrs::kBinaryOp == BinaryOp::kPow) {       // positive bases (else NaN)
    for (double& v : ad) v = std::fabs(v) + 0.25;
    for (double& v : bd) v = std::fabs(v) + 0.25;
  }
  if (std::is_integral_v<T>) {  // int64: whole numbers in [-100, 100]
    for (double& v : ad) v = std::round(v * 100);
    for (double& v : bd) v = std::round(v * 100);
  }
  auto a = testing::Cast<T>(ad);
  auto b = testing::Cast<T>(bd);
  Tensor at{a.data(), dtype, sa}, bt{b.data(), dtype, sb};
  std::string desc = std::string(Attrs::kOp) + " " + Name(dtype) + " " +
                     ToString(sa) + " " + ToString(sb) +
                     (constant ? (reverse ? " const reversed" : " const") : "");
  Attrs attrs;
  std::vector<Tensor> params, inputs;
  // Constant form: the layer reads `x` and holds `c`; reversed, c op x.
  const Tensor& x = reverse ? bt : at;
  const Tensor& c = reverse ? at : bt;
  if (constant) {
    attrs.has_other = true;
    attrs.reverse = reverse;
    attrs.other_shape = c.shape;
    attrs.other_dtype = dtype;
    params = {c};
    inputs = {x};
  } else {
    inputs = {at, bt};
  }
  MultiLayer<Attrs> layer("t", attrs, params, "direct");
  Shape shape = layer.OutputShape(inputs);
  Check(shape == want_shape, desc + ": shape " + ToString(shape));
  if (shape != want_shape) return;
  const int64_t n = NumElements(shape);
  std::vector<T> y(n, T(-42));
  layer.Forward(inputs, Tensor{y.data(), dtype, shape});
  std::vector<double> want(n);
  for (int64_t i = 0; i < n; ++i) {
    want[i] = ApplyRef(
        Attrs::kBinaryOp, double(a[SourceIndex(sa, shape, i)]),
        double(b[SourceIndex(Attrs::OperandShape(sb, sa.size()), shape, i)]));
  }
  const double tol = std::is_same_v<T, double> ? 1e-15 : 1e-6;
  const double err = testing::MaxRelativeError(y, want);
  Check(err <= tol, desc + ": max relative error " + std::to_string(err));
}

struct Case {
  Shape a, b, out;
};

template <class Attrs>
int RunOp(const std::vector<Case>& cases) {
  int ran = 0;
  for (const Case& c : cases) {
    // prelu has no reversed form (its slope is the second operand)
    const int forms = Attrs::kBinaryOp == BinaryOp::kPrelu ? 2 : 3;
    for (int form = 0; form < forms; ++form) {
      RunCase<Attrs, float>(c.a, c.b, c.out, form > 0, form == 2);
      RunCase<Attrs, double>(c.a, c.b, c.out, form > 0, form == 2);
      ran += 2;
      if constexpr (Attrs::kTakesInt64) {
        RunCase<Attrs, int64_t>(c.a, c.b, c.out, form > 0, form == 2);
        ++ran;
      }
    }
  }
  return ran;
}

// Two inputs of a Model: (x * 2-input mul) then + the model input again.
void ModelCase() {
  auto mul = std::make_shared<MultiLayer<MulAttrs>>(
      "mul", MulAttrs{}, std::vector<Tensor>{}, "default");
  SubAttrs sub_attrs;
  std::vector<float> c = {1, 2, 3};
  sub_attrs.has_other = true;
  sub_attrs.reverse = true;
  sub_attrs.other_shape = {3};
  auto sub = std::make_shared<MultiLayer<SubAttrs>>(
      "rsub", sub_attrs,
      std::vector<Tensor>{Tensor{c.data(), DType::kFloat32, {3}}}, "default");
  auto add = std::make_shared<MultiLayer<AddAttrs>>(
      "add", AddAttrs{}, std::vector<Tensor>{}, "default");
  Model m;
  const int sq = m.AddLayer(mul, {Model::kInput, Model::kInput});  // x * x
  const int r = m.AddLayer(sub, sq);                               // c - x*x
  m.AddLayer(add, {r, Model::kInput});  // c - x*x + x
  std::vector<float> x = {0.5f, -1, 2, 3, 4, -5};
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  Check(m.Prepare(xt) == Shape({2, 3}), "model: output shape");
  std::vector<float> y(6);
  m.Forward(xt, Tensor{y.data(), DType::kFloat32, {2, 3}});
  for (int i = 0; i < 6; ++i) {
    const float want = c[i % 3] - x[i] * x[i] + x[i];
    Check(y[i] == want, "model: element " + std::to_string(i));
  }
  Check(m.Describe(2).inputs == std::vector<int>({1, Model::kInput}),
        "model: node inputs");
  ExpectError("model input count", ErrorKind::kInvalidArgument,
              "mul layer 'mul': takes 2 inputs, got 1",
              [&] { m.AddLayer(mul, {0}); });
  ExpectError("model input count", ErrorKind::kInvalidArgument,
              "takes 2 inputs, got 3", [&] { m.AddLayer(mul, {0, 0, 0}); });
  Model bad;
  bad.AddLayer(mul, {Model::kInput, Model::kInput});
  auto relu_like = bad.AddLayer(add, {0, Model::kInput});
  (void)relu_like;
  Check(bad.OutputShape({4, 5}, DType::kFloat64) == Shape({4, 5}),
        "model: shapes");
}

// Special values through pow's constant-exponent runs and std::pow, and
// maximum / minimum / prelu with NaN and infinities, against the reference.
template <class Attrs>
void SpecialValues(double exponent_or_other) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> xs = {0.0,  -0.0, -2.0, 3.0,  inf,
                                  -inf, nan,  0.5,  -0.5, 1e300};
  Attrs attrs;
  attrs.has_other = true;
  attrs.other_shape = {};
  attrs.other_dtype = DType::kFloat64;
  double c = exponent_or_other;
  Tensor ct{&c, DType::kFloat64, {}};
  MultiLayer<Attrs> layer("s", attrs, {ct}, "direct");
  std::vector<double> x = xs, y(xs.size());
  const Shape shape = {static_cast<int64_t>(xs.size())};
  layer.Forward(std::vector<Tensor>{Tensor{x.data(), DType::kFloat64, shape}},
                Tensor{y.data(), DType::kFloat64, shape});
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = ApplyRef(Attrs::kBinaryOp, xs[i], c);
    const bool same = (std::isnan(want) && std::isnan(y[i])) || want == y[i];
    Check(same, std::string(Attrs::kOp) + " special value " +
                    std::to_string(xs[i]) + ", " + std::to_string(c) +
                    ": got " + std::to_string(y[i]));
  }
}

// int64 sums and products past the range wrap (two's complement, as torch),
// and the ops without an integer meaning refuse int64.
void Int64() {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> a = {kMax, kMin, kMax, 7}, b = {1, 1, 2, -3};
  const Shape s = {4};
  Tensor at{a.data(), DType::kInt64, s}, bt{b.data(), DType::kInt64, s};
  std::vector<int64_t> y(4);
  Tensor yt{y.data(), DType::kInt64, s};
  MultiLayer<AddAttrs>("a", AddAttrs{}, {}, "direct").Forward({at, bt}, yt);
  Check(y == std::vector<int64_t>{kMin, kMin + 1, kMin + 1, 4},
        "int64 add wraps");
  MultiLayer<SubAttrs>("s", SubAttrs{}, {}, "direct").Forward({bt, at}, yt);
  Check(y == std::vector<int64_t>{kMin + 2, kMin + 1, kMin + 3, -10},
        "int64 sub wraps");
  MultiLayer<MulAttrs>("m", MulAttrs{}, {}, "direct").Forward({at, bt}, yt);
  Check(y == std::vector<int64_t>{kMax, kMin, -2, -21}, "int64 mul wraps");
  // remainder by 0 and INT64_MIN by -1: 0 (as NumPy), not undefined
  std::vector<int64_t> divisors = {0, -1, 3, -3}, dividends = {5, kMin, -7, 7};
  Tensor nt{dividends.data(), DType::kInt64, s},
      dt0{divisors.data(), DType::kInt64, s};
  MultiLayer<RemainderAttrs>("r", RemainderAttrs{}, {}, "direct")
      .Forward({nt, dt0}, yt);
  Check(y == std::vector<int64_t>{0, 0, 2, -2}, "int64 remainder");
  MultiLayer<FmodAttrs>("f", FmodAttrs{}, {}, "direct").Forward({nt, dt0}, yt);
  Check(y == std::vector<int64_t>{0, 0, -1, 1}, "int64 fmod");
  ExpectError("int64 div", ErrorKind::kDType,
              "input 0 is int64; div takes float32 or float64", [&] {
                MultiLayer<DivAttrs>("d", DivAttrs{}, {}, "direct")
                    .OutputShape(std::vector<Tensor>{at, bt});
              });
  std::vector<double> d(4);
  Tensor dt{d.data(), DType::kFloat64, s};
  MultiLayer<AddAttrs> add("a", AddAttrs{}, {}, "direct");
  ExpectError("int64 with float64", ErrorKind::kDType,
              "input 1 is float64 but input 0 is int64",
              [&] { add.OutputShape(std::vector<Tensor>{at, dt}); });
  std::vector<uint8_t> flags(4);
  Tensor ft{flags.data(), DType::kBool, s};
  ExpectError("bool", ErrorKind::kDType,
              "input 0 is bool; add takes float32, float64 or int64",
              [&] { add.OutputShape(std::vector<Tensor>{ft, ft}); });
  PowAttrs pc;
  pc.has_other = true;
  pc.other_shape = s;
  pc.other_dtype = DType::kInt64;
  ExpectError("int64 constant", ErrorKind::kDType,
              "the constant operand is int64; pow takes float32 or float64",
              [&] { MultiLayer<PowAttrs>("p", pc, {bt}, "direct"); });
}

void Errors() {
  std::vector<float> x(6), z(4);
  Tensor a{x.data(), DType::kFloat32, {2, 3}};
  Tensor b{z.data(), DType::kFloat32, {2, 2}};
  MultiLayer<AddAttrs> add("a", AddAttrs{}, {}, "direct");
  ExpectError("not broadcastable", ErrorKind::kShape,
              "add layer 'a' (direct): input 0 (2, 3) and input 1 (2, 2) do "
              "not broadcast: dimension -1 is 3 vs 2",
              [&] { add.OutputShape(std::vector<Tensor>{a, b}); });
  ExpectError("one input", ErrorKind::kInvalidArgument,
              "add layer 'a': takes 2 inputs, got 1",
              [&] { add.OutputShape(a); });
  std::vector<double> d(6);
  Tensor ad{d.data(), DType::kFloat64, {2, 3}};
  ExpectError("dtypes", ErrorKind::kDType,
              "input 1 is float64 but input 0 is float32",
              [&] { add.OutputShape(std::vector<Tensor>{a, ad}); });
  ExpectError("params", ErrorKind::kInvalidArgument,
              "div takes 0 parameter tensors, got 1",
              [&] { MultiLayer<DivAttrs>("d", DivAttrs{}, {a}, "direct"); });
  DivAttrs rev;
  rev.reverse = true;
  ExpectError("reverse", ErrorKind::kInvalidArgument,
              "reverse applies only to the one-input form",
              [&] { MultiLayer<DivAttrs>("d", rev, {}, "direct"); });
  PreluAttrs rp;
  rp.reverse = true;
  rp.has_other = true;
  rp.other_shape = {3};
  std::vector<float> slope(3);
  ExpectError("prelu reverse", ErrorKind::kInvalidArgument,
              "prelu's slope is its second operand", [&] {
                MultiLayer<PreluAttrs>(
                    "p", rp, {Tensor{slope.data(), DType::kFloat32, {3}}},
                    "direct");
              });
  MultiLayer<PreluAttrs> prelu("p", PreluAttrs{}, {}, "direct");
  ExpectError("prelu channels", ErrorKind::kShape,
              "input 0 (2, 3) and input 1 (2,) do not broadcast", [&] {
                std::vector<float> s2(2);
                prelu.OutputShape(std::vector<Tensor>{
                    a, Tensor{s2.data(), DType::kFloat32, {2}}});
              });
  MulAttrs k;
  k.has_other = true;
  k.other_shape = {2, 2};
  MultiLayer<MulAttrs> mul("m", k, {b}, "direct");
  ExpectError("constant", ErrorKind::kShape,
              "input (2, 3) and constant (2, 2) do not broadcast",
              [&] { mul.OutputShape(a); });
  ExpectError("constant dtype", ErrorKind::kDType,
              "input is float64 but the constant operand is float32",
              [&] { mul.OutputShape(ad); });
}

}  // namespace

int Main() {
  const std::vector<Case> cases = {
      {{2, 3}, {2, 3}, {2, 3}},
      {{}, {}, {}},
      {{2, 3}, {}, {2, 3}},
      {{}, {4}, {4}},
      {{2, 3, 4}, {4}, {2, 3, 4}},
      {{2, 3, 4}, {3, 1}, {2, 3, 4}},
      {{2, 1, 4}, {1, 3, 1}, {2, 3, 4}},
      {{2, 3, 4, 5}, {1, 3, 1, 1}, {2, 3, 4, 5}},
      {{2, 3, 4, 5}, {2, 3, 1, 1}, {2, 3, 4, 5}},
      {{1, 5, 1}, {3, 1, 7}, {3, 5, 7}},
      {{4, 1}, {1, 1}, {4, 1}},
      {{2, 0, 3}, {1, 3}, {2, 0, 3}},
      {{1, 197, 64}, {5, 197, 64}, {5, 197, 64}},
      {{3, 70000}, {3, 70000}, {3, 70000}},
      {{8, 1, 9000}, {1, 6, 1}, {8, 6, 9000}},
  };
  int ran = RunOp<AddAttrs>(cases) + RunOp<SubAttrs>(cases) +
            RunOp<MulAttrs>(cases) + RunOp<DivAttrs>(cases) +
            RunOp<PowAttrs>(cases) + RunOp<MaximumAttrs>(cases) +
            RunOp<MinimumAttrs>(cases) + RunOp<RemainderAttrs>(cases) +
            RunOp<FmodAttrs>(cases);
  // prelu: a 1-D slope along dimension 1 (torch's channels), else NumPy's
  // broadcasting.
  ran += RunOp<PreluAttrs>({
      {{2, 3, 4, 5}, {3}, {2, 3, 4, 5}},
      {{2, 3}, {3}, {2, 3}},
      {{2, 3, 4}, {1}, {2, 3, 4}},
      {{4}, {4}, {4}},
      {{2, 3, 4, 5}, {1, 3, 1, 1}, {2, 3, 4, 5}},
      {{2, 3, 4, 5}, {3, 1, 1}, {2, 3, 4, 5}},
      {{2, 3, 4, 5}, {4, 5}, {2, 3, 4, 5}},
      {{3, 70000}, {70000}, {3, 70000}},
      {{2, 3, 9000}, {3}, {2, 3, 9000}},
  });
  for (double c : {2.0, 1.0, -1.0, 0.5, 3.0, 0.0, -2.5}) {
    SpecialValues<PowAttrs>(c);
  }
  for (double c : {0.0, 1.0, -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN()}) {
    SpecialValues<MaximumAttrs>(c);
    SpecialValues<MinimumAttrs>(c);
  }
  SpecialValues<PreluAttrs>(0.25);
  ModelCase();
  Int64();
  Errors();
  return testing::Summary("binary", ran);
}

}  // namespace ai3
